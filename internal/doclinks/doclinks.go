// Package doclinks checks the links of the repository's Markdown
// documentation: every relative link names a file or directory of the
// repository, and every #fragment a heading of the page it points to.
package doclinks

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// Link is one Markdown link or image of a page.
type Link struct {
	Page   string // the page, relative to the repository root
	Line   int
	Target string
}

// inlineLink matches [text](target) and ![alt](target); the target ends at
// the first space (a title may follow) or closing parenthesis.
var inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// Links returns the links of page (a path relative to root), skipping
// fenced code blocks and inline code.
func Links(root, page string) ([]Link, error) {
	data, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		return nil, err
	}
	var links []Link
	fenced := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range inlineLink.FindAllStringSubmatch(stripCode(line), -1) {
			links = append(links, Link{Page: page, Line: n, Target: m[1]})
		}
	}
	return links, sc.Err()
}

// stripCode blanks `inline code`, where brackets are no links.
func stripCode(line string) string {
	var b strings.Builder
	in := false
	for _, r := range line {
		if r == '`' {
			in = !in
			continue
		}
		if !in {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Check returns what is wrong with a link: a relative path that names
// nothing in the repository (or leaves it), or a fragment that names no
// heading of its page. External links (a scheme) are not checked.
func Check(root string, l Link) error {
	target := l.Target
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return nil
	}
	path, fragment, _ := strings.Cut(target, "#")
	file := l.Page
	if path != "" {
		file = filepath.Clean(filepath.Join(filepath.Dir(l.Page), path))
		if file == ".." || strings.HasPrefix(file, "../") || filepath.IsAbs(path) {
			return fmt.Errorf("%s:%d: %s leaves the repository", l.Page, l.Line, target)
		}
		if _, err := os.Stat(filepath.Join(root, file)); err != nil {
			return fmt.Errorf("%s:%d: %s: no such file in the repository", l.Page, l.Line, target)
		}
	}
	if fragment == "" || !strings.HasSuffix(file, ".md") {
		return nil
	}
	anchors, err := Anchors(filepath.Join(root, file))
	if err != nil {
		return err
	}
	if !anchors[fragment] {
		return fmt.Errorf("%s:%d: %s: %s has no heading #%s", l.Page, l.Line, target, file, fragment)
	}
	return nil
}

// Anchors returns the fragment ids GitHub gives the headings of a page.
func Anchors(page string) (map[string]bool, error) {
	data, err := os.ReadFile(page)
	if err != nil {
		return nil, err
	}
	anchors := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		id := Slug(text)
		if n := seen[id]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", id, n)] = true
		} else {
			anchors[id] = true
		}
		seen[id]++
	}
	return anchors, nil
}

// Slug is GitHub's heading id: lower case, letters, digits, '-' and '_'
// kept, spaces made '-', everything else dropped.
func Slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}
