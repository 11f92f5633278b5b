package boltfile

import (
	"bytes"
	"compress/gzip"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// intact is testdata/intact.db.gz: a bbolt file written by bbolt v1.5.0 the
// way file_storage writes (NoFreelistSync, a bucket "default"), over
// three transactions that put 120 keys with values of 100 B to 7.5 kB
// (overflow pages; branch pages) and delete some (free pages).
func intact(t testing.TB) []byte {
	t.Helper()
	f, err := os.Open("testdata/intact.db.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func checkBytes(b []byte) error { return check(bytes.NewReader(b), int64(len(b))) }

func TestIntactFilePasses(t *testing.T) {
	b := intact(t)
	if err := checkBytes(b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Check(path); err != nil {
		t.Fatal(err)
	}
	if err := Check(filepath.Join(t.TempDir(), "absent")); err != nil {
		t.Fatalf("a missing file is bbolt's to create: %v", err)
	}
}

// TestDamageIsFound: the faults of issue 32 that made bbolt panic or fail
// at open are each reported as damage.
func TestDamageIsFound(t *testing.T) {
	const page = 4096
	tests := map[string]func(b []byte) []byte{
		"random data pages": func(b []byte) []byte { // dd if=/dev/urandom bs=4096 seek=2 count=8 conv=notrunc
			r := rand.New(rand.NewPCG(1, 2))
			for i := 2 * page; i < 10*page; i++ {
				b[i] = byte(r.Uint32())
			}
			return b
		},
		"truncated to half": func(b []byte) []byte { return b[:len(b)/2] },
		"zeroed meta pages": func(b []byte) []byte { clear(b[:2*page]); return b },
		"empty":             func(b []byte) []byte { return nil },
		"one page":          func(b []byte) []byte { return b[:page] },
	}
	for name, damage := range tests {
		t.Run(name, func(t *testing.T) {
			err := checkBytes(damage(intact(t)))
			if err == nil {
				t.Fatal("not found")
			}
			if !isDamaged(err) {
				t.Fatalf("not ErrDamaged: %v", err)
			}
			t.Log(err)
		})
	}
}

// TestEveryDataPageOverwritten: random bytes over any one page in use but
// the meta pages are found (pages no tree reaches, free ones, may hold
// anything).
func TestEveryDataPageOverwritten(t *testing.T) {
	const page = 4096
	b := intact(t)
	reached := reachedPages(t, b)
	r := rand.New(rand.NewPCG(3, 4))
	for id := range reached {
		d := bytes.Clone(b)
		for i := id * page; i < (id+1)*page; i++ {
			d[i] = byte(r.Uint32())
		}
		if err := checkBytes(d); err == nil {
			t.Errorf("page %d overwritten: not found", id)
		}
	}
	t.Logf("%d pages reached of %d", len(reached), len(b)/page)
}

// reachedPages are the first pages of the pages the check reads.
func reachedPages(t *testing.T, b []byte) map[int]bool {
	t.Helper()
	c := &checker{r: bytes.NewReader(b), pageSize: 4096, hwm: uint64(len(b) / 4096), visited: map[uint64]bool{}}
	m0, _ := readMeta(bytes.NewReader(b), 0)
	m1, _ := readMeta(bytes.NewReader(b), 4096)
	m := m0
	if m1.txid > m0.txid {
		m = m1
	}
	c.hwm = m.hwm
	if err := c.bucket(m.root, nil, 0); err != nil {
		t.Fatal(err)
	}
	heads := map[int]bool{}
	for id := range c.visited {
		p := parseHeader(b[id*4096:])
		if p.id == id {
			heads[int(id)] = true
		}
	}
	return heads
}

func isDamaged(err error) bool {
	return err != nil && bytes.Contains([]byte(err.Error()), []byte(ErrDamaged.Error()))
}

// FuzzCheck: whatever the bytes, Check returns (never panics), and an
// edit of the intact file's pages in use is found or harmless.
func FuzzCheck(f *testing.F) {
	b := intact(f)
	f.Add(uint32(2*4096), []byte{0xff}, uint32(0))
	f.Add(uint32(0), []byte{0}, uint32(len(b)/2))
	f.Add(uint32(4096+20), []byte{1, 2, 3, 4}, uint32(0))
	f.Fuzz(func(t *testing.T, at uint32, patch []byte, cut uint32) {
		d := bytes.Clone(b)
		if int(at) < len(d) {
			copy(d[at:], patch)
		}
		if cut > 0 && int(cut) < len(d) {
			d = d[:cut]
		}
		_ = checkBytes(d)
	})
}
