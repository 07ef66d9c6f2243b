package doctest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// link matches a Markdown link's target: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestLinks checks that every relative link of the documentation names a
// file that exists and, with #anchor, a heading of that file, as GitHub
// makes anchors from headings.
func TestLinks(t *testing.T) {
	root := "../.."
	anchors := make(map[string]map[string]bool) // file -> anchors
	headingsOf := func(file string) map[string]bool {
		if a, ok := anchors[file]; ok {
			return a
		}
		a := make(map[string]bool)
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		inBlock := false
		for _, line := range strings.Split(string(text), "\n") {
			if strings.HasPrefix(line, "```") {
				inBlock = !inBlock
			}
			if !inBlock && strings.HasPrefix(line, "#") {
				a[slug(strings.TrimLeft(line, "#"))] = true
			}
		}
		anchors[file] = a
		return a
	}
	checked := 0
	for _, file := range Files(t, root) {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, file)
		for _, m := range link.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), path)
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: link %s: %v", rel, target, err)
					continue
				}
			}
			if anchor != "" && !headingsOf(dest)[anchor] {
				t.Errorf("%s: link %s: no heading with that anchor", rel, target)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Error("no links found: the pattern is broken")
	}
}

// slug is GitHub's anchor for a heading: lower case, spaces to hyphens,
// and every other character but letters, digits, hyphens and underscores
// dropped.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
