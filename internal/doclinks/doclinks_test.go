package doclinks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const root = "../.."

// TestDocumentationLinks checks every link of README.md and docs/*.md.
func TestDocumentationLinks(t *testing.T) {
	pages := []string{"README.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		rel, _ := filepath.Rel(root, d)
		pages = append(pages, filepath.ToSlash(rel))
	}
	checked := 0
	for _, page := range pages {
		links, err := Links(root, page)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links {
			if err := Check(root, l); err != nil {
				t.Error(err)
			}
			checked++
		}
	}
	if checked < 50 {
		t.Errorf("only %d links checked: is the parser broken?", checked)
	}
}

func TestCheckFindsBrokenLinks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/b.md", "# Title\n\n## Choosing `settle_delay`\n\n## Title\n")
	write("README.md", strings.Join([]string{
		"[ok](docs/b.md) [ok anchor](docs/b.md#choosing-settle_delay) [dup](docs/b.md#title-1)",
		"![img](docs/missing.png) [bad anchor](docs/b.md#nope) [outside](../x.md)",
		"[web](https://example.com/x) `[not a link](nowhere.md)` [self](#top)",
		"```", "[in code](nowhere.md)", "```",
		"# Top",
	}, "\n"))
	links, err := Links(dir, "README.md")
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	for _, l := range links {
		if err := Check(dir, l); err != nil {
			bad = append(bad, l.Target)
		}
	}
	want := []string{"docs/missing.png", "docs/b.md#nope", "../x.md"}
	if strings.Join(bad, " ") != strings.Join(want, " ") || len(links) != 8 {
		t.Errorf("%d links, broken %q; want 8 links, broken %q", len(links), bad, want)
	}
}
