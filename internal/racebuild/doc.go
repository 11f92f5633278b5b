// Package racebuild says whether the binary was built with the race
// detector. The quality goal tests and the CLI = processor equality tests
// over every quality family run single-threaded engines for minutes: under
// -race they cost several times that and find nothing the race run of the
// concurrent code does not, so they run in full without it (make test) and
// on a few families with it.
package racebuild
