// Package boltfile checks a bbolt database file for the damage that makes
// bbolt panic while opening it, before anyone opens it.
//
// The file_storage extension opens its bbolt files with NoFreelistSync, so
// bbolt rebuilds the free list at open by walking every page of the file,
// and it does so in a goroutine of its own: a damaged page panics there
// (page id mismatch, a page past the end of the file, a bad page type or
// key order), where no recover of the caller reaches, and takes the whole
// collector down. Check walks the same structure with bounds-checked reads
// of the file instead of bbolt's memory map, and reports the damage as an
// error.
//
// The layout (bbolt's file format, version 2, little endian): every page
// starts with a 16-byte header (id uint64, flags uint16, count uint16,
// overflow uint32). Pages 0 and 1 are meta pages: after the header, magic
// uint32 0xED0CDAED, version uint32 2, page size uint32, flags uint32, the
// root bucket (root page uint64, sequence uint64), the freelist page
// uint64, the high water mark uint64, the transaction id uint64 and an
// FNV-64a checksum of the meta's preceding 56 bytes. The valid meta with the
// higher transaction id is the current one. Branch pages hold count
// elements of 16 bytes (pos uint32, key size uint32, child page uint64),
// leaf pages count elements of 16 bytes (flags uint32, pos uint32, key size
// uint32, value size uint32); pos counts from the element itself. A leaf
// element with flag 1 is a bucket: its value starts with the bucket's root
// page and sequence, and a root page of 0 means the bucket's page follows
// inline in the value.
package boltfile // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/boltfile"

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

const (
	pageHeaderSize = 16
	elementSize    = 16
	metaSize       = 64
	metaSumAt      = 56
	magic          = 0xED0CDAED
	formatVersion  = 2

	branchPage   = 0x01
	leafPage     = 0x02
	metaPage     = 0x04
	freelistPage = 0x10
	bucketLeaf   = 0x01

	noFreelist = ^uint64(0)
	// maxDepth bounds the nesting of pages and buckets: a b+tree of a
	// file this package can read is far shallower, and a cycle is caught
	// by the visited set before it.
	maxDepth = 64
)

// ErrDamaged wraps every error of Check about the file's content.
var ErrDamaged = errors.New("damaged bbolt file")

// Check reports whether the bbolt file at path can be opened safely: nil
// when it is intact or does not exist (bbolt creates it), an error wrapping
// ErrDamaged when its content is damaged, and another error when it cannot
// be read.
func Check(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	return check(f, info.Size())
}

func damaged(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrDamaged, fmt.Sprintf(format, args...))
}

type meta struct {
	pageSize uint32
	root     uint64
	freelist uint64
	hwm      uint64
	txid     uint64
}

// readMeta reads the meta at offset; ok is false when it is not a valid one.
func readMeta(r io.ReaderAt, offset int64) (meta, bool) {
	var buf [pageHeaderSize + metaSize]byte
	if _, err := r.ReadAt(buf[:], offset); err != nil {
		return meta{}, false
	}
	b := buf[pageHeaderSize:]
	le := binary.LittleEndian
	if le.Uint32(b[0:]) != magic || le.Uint32(b[4:]) != formatVersion {
		return meta{}, false
	}
	h := fnv.New64a()
	h.Write(b[:metaSumAt])
	if h.Sum64() != le.Uint64(b[metaSumAt:]) {
		return meta{}, false
	}
	return meta{pageSize: le.Uint32(b[8:]), root: le.Uint64(b[16:]), freelist: le.Uint64(b[32:]), hwm: le.Uint64(b[40:]), txid: le.Uint64(b[48:])}, true
}

func check(r io.ReaderAt, size int64) error {
	if size == 0 {
		return damaged("empty file (0 bytes)")
	}
	m0, ok0 := readMeta(r, 0)
	pageSize := int64(m0.pageSize)
	if !ok0 {
		// bbolt finds the page size from the second meta then.
		for i := range 15 {
			if m, ok := readMeta(r, 1024<<i); ok && int64(m.pageSize) == 1024<<i {
				pageSize = int64(m.pageSize)
				break
			}
		}
	}
	if pageSize < 1024 || pageSize > 1<<24 || pageSize&(pageSize-1) != 0 {
		return damaged("no valid meta page")
	}
	m1, ok1 := readMeta(r, pageSize)
	var m meta
	switch {
	case ok0 && ok1:
		m = m0
		if m1.txid > m0.txid {
			m = m1
		}
	case ok0:
		m = m0
	case ok1:
		m = m1
	default:
		return damaged("neither meta page is valid")
	}
	if int64(m.pageSize) != pageSize {
		return damaged("meta pages disagree on the page size")
	}
	if m.hwm < 3 || int64(m.hwm) > size/pageSize {
		return damaged("%d pages in use, the file (%d bytes) holds %d", m.hwm, size, size/pageSize)
	}
	c := &checker{r: r, pageSize: pageSize, hwm: m.hwm, visited: map[uint64]bool{}}
	if m.freelist != noFreelist {
		p, err := c.page(m.freelist)
		if err != nil {
			return err
		}
		if p.flags != freelistPage {
			return damaged("page %d: the freelist page has flags %#x", m.freelist, p.flags)
		}
	}
	return c.bucket(m.root, nil, 0)
}

type checker struct {
	r        io.ReaderAt
	pageSize int64
	hwm      uint64
	visited  map[uint64]bool
}

type page struct {
	id       uint64
	flags    uint16
	count    int
	overflow uint32
	data     []byte // the whole page, header included
}

func parseHeader(data []byte) page {
	le := binary.LittleEndian
	return page{id: le.Uint64(data), flags: le.Uint16(data[8:]), count: int(le.Uint16(data[10:])), overflow: le.Uint32(data[12:]), data: data}
}

// page reads page id with its overflow pages, each read once.
func (c *checker) page(id uint64) (page, error) {
	if id < 2 || id >= c.hwm {
		return page{}, damaged("page %d: outside the pages in use (2 to %d)", id, c.hwm-1)
	}
	head := make([]byte, c.pageSize)
	if _, err := c.r.ReadAt(head, int64(id)*c.pageSize); err != nil {
		return page{}, damaged("page %d: %v", id, err)
	}
	p := parseHeader(head)
	if p.id != id {
		return page{}, damaged("page %d: its header says page %d", id, p.id)
	}
	last := id + uint64(p.overflow)
	if last < id || last >= c.hwm {
		return page{}, damaged("page %d: %d overflow pages run past the pages in use (%d)", id, p.overflow, c.hwm)
	}
	for i := id; i <= last; i++ {
		if c.visited[i] {
			return page{}, damaged("page %d: referenced twice", i)
		}
		c.visited[i] = true
	}
	if p.overflow > 0 {
		p.data = make([]byte, int64(p.overflow+1)*c.pageSize)
		if _, err := c.r.ReadAt(p.data, int64(id)*c.pageSize); err != nil {
			return page{}, damaged("page %d: %v", id, err)
		}
	}
	return p, nil
}

// bucket checks the tree of a bucket whose root is page root, or, when
// root is 0, whose page is inline.
func (c *checker) bucket(root uint64, inline []byte, depth int) error {
	if depth > maxDepth {
		return damaged("buckets nested more than %d deep", maxDepth)
	}
	if root == 0 {
		if len(inline) < pageHeaderSize {
			return damaged("inline bucket of %d bytes", len(inline))
		}
		p := parseHeader(inline)
		if p.flags != leafPage {
			return damaged("inline bucket page with flags %#x", p.flags)
		}
		return c.elements(p, "inline", nil, nil, depth)
	}
	return c.tree(root, nil, nil, depth)
}

// tree checks the b+tree page id and its children; every key of it must lie
// in [lo, hi) (nil: unbounded).
func (c *checker) tree(id uint64, lo, hi []byte, depth int) error {
	if depth > maxDepth {
		return damaged("page %d: more than %d levels deep", id, maxDepth)
	}
	p, err := c.page(id)
	if err != nil {
		return err
	}
	if p.flags != branchPage && p.flags != leafPage {
		return damaged("page %d: flags %#x, not a branch or leaf page", id, p.flags)
	}
	return c.elements(p, fmt.Sprint("page ", id), lo, hi, depth)
}

func (c *checker) elements(p page, name string, lo, hi []byte, depth int) error {
	le := binary.LittleEndian
	if pageHeaderSize+p.count*elementSize > len(p.data) {
		return damaged("%s: %d elements do not fit its %d bytes", name, p.count, len(p.data))
	}
	type child struct {
		id     uint64
		lo, hi []byte
	}
	var children []child
	var prev []byte
	for i := range p.count {
		at := pageHeaderSize + i*elementSize
		e := p.data[at : at+elementSize]
		var key, value []byte
		var flags uint32
		var childID uint64
		if p.flags == branchPage {
			pos, ksize := int64(le.Uint32(e)), int64(le.Uint32(e[4:]))
			childID = le.Uint64(e[8:])
			start, end := int64(at)+pos, int64(at)+pos+ksize
			if end > int64(len(p.data)) {
				return damaged("%s: element %d's key runs past the page", name, i)
			}
			key = p.data[start:end]
		} else {
			flags = le.Uint32(e)
			pos, ksize, vsize := int64(le.Uint32(e[4:])), int64(le.Uint32(e[8:])), int64(le.Uint32(e[12:]))
			start := int64(at) + pos
			if start+ksize+vsize > int64(len(p.data)) {
				return damaged("%s: element %d's key and value run past the page", name, i)
			}
			key, value = p.data[start:start+ksize], p.data[start+ksize:start+ksize+vsize]
		}
		if prev != nil && bytes.Compare(prev, key) >= 0 {
			return damaged("%s: keys out of order at element %d", name, i)
		}
		// The order bbolt's own check requires (tx_check.go): keys in
		// [lo, hi), increasing.
		if (lo != nil && bytes.Compare(key, lo) < 0) || (hi != nil && bytes.Compare(key, hi) >= 0) {
			return damaged("%s: element %d's key outside its parent's range", name, i)
		}
		prev = key
		switch {
		case p.flags == branchPage:
			children = append(children, child{id: childID, lo: key})
			if n := len(children); n > 1 {
				children[n-2].hi = key
			}
		case flags&bucketLeaf != 0:
			if len(value) < 16 {
				return damaged("%s: bucket element %d of %d bytes", name, i, len(value))
			}
			if err := c.bucket(le.Uint64(value), value[16:], depth+1); err != nil {
				return err
			}
		}
	}
	if len(children) > 0 {
		children[len(children)-1].hi = hi
	}
	for _, ch := range children {
		if err := c.tree(ch.id, ch.lo, ch.hi, depth+1); err != nil {
			return err
		}
	}
	return nil
}
