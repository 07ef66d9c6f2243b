// Package doctest extracts the fenced code blocks of the documentation
// (README.md and docs/*.md), so that tests can run every example in it:
// caddymodule adapts the Caddyfile and JSON blocks, scripts/yaegitest
// hands the Traefik YAML blocks to the interpreted plugin.
//
// A block opens with three backquotes, the language and optional words
// that say how to run it (docs/development.md lists them):
//
//	```caddyfile rate_limit
//
// A block whose first line is "# error: <text>" shows a mistake: it must
// fail with an error that contains <text>. Every block names its language,
// one of Languages, so that no example escapes the tests in a bare fence.
package doctest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Block is one fenced code block.
type Block struct {
	// File is the path of the Markdown file, relative to the repository.
	File string
	// Line is the line of the opening fence, counted from 1.
	Line int
	// Lang is the first word of the fence's info string, such as
	// "caddyfile" or "yaml".
	Lang string
	// Kind is the second word of the info string, such as "rate_limit"
	// or "labels"; empty when there is none.
	Kind string
	// Text is the block's content, every line ending in a newline.
	Text string
	// WantErr is the text after "# error: " on the block's first line,
	// empty when the block is meant to work.
	WantErr string
}

// String names the block as file:line, for test output.
func (b Block) String() string { return fmt.Sprintf("%s:%d (%s %s)", b.File, b.Line, b.Lang, b.Kind) }

const errorPrefix = "# error: "

// Languages are the languages a block may have. The tests run caddyfile,
// json and yaml blocks; sh (commands) and text (output) are not run.
var Languages = []string{"caddyfile", "json", "yaml", "sh", "text"}

// Files returns README.md and docs/*.md under the repository root.
func Files(tb testing.TB, root string) []string {
	tb.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(docs) == 0 {
		tb.Fatalf("no docs/*.md under %s", root)
	}
	return append([]string{filepath.Join(root, "README.md")}, docs...)
}

// Blocks returns the fenced blocks of every documentation file under root
// whose language is lang.
func Blocks(tb testing.TB, root, lang string) []Block {
	tb.Helper()
	var all []Block
	for _, file := range Files(tb, root) {
		blocks, err := parse(file)
		if err != nil {
			tb.Fatal(err)
		}
		for _, b := range blocks {
			b.File, _ = filepath.Rel(root, file)
			if !slices.Contains(Languages, b.Lang) {
				tb.Errorf("%v: the fence names no language, or one other than %v", b, Languages)
			}
			if b.Lang == lang {
				all = append(all, b)
			}
		}
	}
	return all
}

// parse reads the fenced blocks of one Markdown file. A fence is a line
// that starts with three backquotes; one that is not closed is an error.
func parse(file string) ([]Block, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		blocks []Block
		cur    *Block
		text   strings.Builder
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if !strings.HasPrefix(line, "```") {
			if cur != nil {
				text.WriteString(line)
				text.WriteByte('\n')
			}
			continue
		}
		if cur != nil {
			cur.Text = text.String()
			if first, _, _ := strings.Cut(cur.Text, "\n"); strings.HasPrefix(first, errorPrefix) {
				cur.WantErr = strings.TrimSpace(strings.TrimPrefix(first, errorPrefix))
			}
			blocks = append(blocks, *cur)
			cur = nil
			continue
		}
		words := strings.Fields(strings.TrimPrefix(line, "```"))
		cur = &Block{Line: n}
		if len(words) > 0 {
			cur.Lang = words[0]
		}
		if len(words) > 1 {
			cur.Kind = words[1]
		}
		text.Reset()
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: code block not closed", file, cur.Line)
	}
	return blocks, nil
}
