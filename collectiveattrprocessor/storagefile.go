package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"

	"go.opentelemetry.io/collector/component"
)

// storageFile returns the file in which a file_storage extension
// (contrib's extension/storage/filestorage, the one this distribution
// builds) keeps the client of processor id, or "" when ext is another
// storage extension.
//
// The processor checks that file before asking the extension for its
// client (boltfile.Check): on a damaged file, bbolt panics in a goroutine of
// its own while the extension opens it, which nothing can recover (not the
// extension's recreate, which recovers its own goroutine only). The
// extension does not expose its directory, so it is read from its
// configuration by reflection: the field path is checked by the end-to-end
// tests against the built collector, and an extension of another shape is
// simply not checked.
func storageFile(ext component.Component, id component.ID) string {
	v := reflect.ValueOf(ext)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return ""
	}
	v = v.Elem()
	if v.Kind() != reflect.Struct || !strings.HasSuffix(v.Type().PkgPath(), "/extension/storage/filestorage") {
		return ""
	}
	cfg := v.FieldByName("cfg")
	if cfg.Kind() != reflect.Pointer || cfg.IsNil() {
		return ""
	}
	dir := cfg.Elem().FieldByName("Directory")
	if dir.Kind() != reflect.String || dir.String() == "" {
		return ""
	}
	return filepath.Join(dir.String(), fileStorageName(fmt.Sprintf("processor_%s_%s", id.Type(), id.Name())))
}

// fileStorageName is a client's file name as file_storage derives it from
// "kind_type_name": every character but ASCII letters, digits, '.', '-' and
// '_' becomes '~' and its code point in 4 hex digits.
func fileStorageName(raw string) string {
	var b strings.Builder
	for _, r := range raw {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, "~%04X", r)
		}
	}
	return b.String()
}
