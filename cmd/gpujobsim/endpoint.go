package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"
)

// defaultOTLPEndpoint is where gpujobsim sends when -otlp-endpoint is not
// given: a collector's OTLP/HTTP receiver on this machine.
var defaultOTLPEndpoint = "127.0.0.1:4318"

// otlpTarget decides where a run sends: the endpoint given, checked to
// listen (an error naming it otherwise); or, when none was given, the
// default one if a collector listens there, else nothing, said on stderr.
// So gpujobsim alone writes its files and prints its ground truth.
func otlpTarget(endpoint string, explicit bool, stderr io.Writer) (string, error) {
	if endpoint == "" {
		return "", nil
	}
	err := probe(endpoint)
	switch {
	case err == nil:
		return endpoint, nil
	case explicit:
		return "", fmt.Errorf("-otlp-endpoint %s: no collector there (%v); start one, or pass -otlp-endpoint \"\" to send nothing", endpoint, err)
	}
	fmt.Fprintf(stderr, "gpujobsim: no collector at %s (the default -otlp-endpoint): simulating without sending\n", endpoint)
	return "", nil
}

// probe connects to the endpoint's host and port.
func probe(endpoint string) error {
	hostPort := endpoint
	if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil {
			return err
		}
		hostPort = u.Host
		if u.Port() == "" {
			port := "80"
			if u.Scheme == "https" {
				port = "443"
			}
			hostPort = net.JoinHostPort(u.Hostname(), port)
		}
	}
	c, err := net.DialTimeout("tcp", hostPort, 2*time.Second)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Err != nil {
			return op.Err // "connect: connection refused", without the addresses
		}
		return err
	}
	return c.Close()
}
