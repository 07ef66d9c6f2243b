package caddymodule

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/windowlimit/windowlimit/internal/doctest"
)

// TestDocExamples runs every Caddyfile and JSON example of README.md and
// docs/*.md, so the documentation cannot drift from the module. A
// ```caddyfile block is adapted with Caddy's Caddyfile adapter, and each
// rate_limit handler of the result is provisioned and validated; the fence's
// second word says how to run the block (docs/development.md):
//
//	```caddyfile             a whole Caddyfile
//	```caddyfile site        the inside of a site block
//	```caddyfile rate_limit  the inside of a rate_limit block
//	```caddyfile syntax      a synopsis with <placeholders>: not run
//	```json                  a rate_limit handler: decoded strictly and provisioned
//
// A block whose first line is "# error: <text>" must fail with an error
// that contains <text>.
func TestDocExamples(t *testing.T) {
	t.Setenv("REDIS_PASSWORD", "doc-example")
	ran := make(map[string]int)
	for _, b := range doctest.Blocks(t, "..", "caddyfile") {
		t.Run(fmt.Sprintf("%s:%d", b.File, b.Line), func(t *testing.T) {
			if b.Kind == "syntax" {
				if !strings.Contains(b.Text, "<") {
					t.Errorf("%v: a syntax block without <placeholders> is an example: give it a fence that runs it", b)
				}
				ran[b.Kind]++
				return
			}
			input, _, err := docCaddyfile(b)
			if err != nil {
				t.Fatal(err)
			}
			checkDocResult(t, b, adaptAndProvision(input))
			ran[b.Kind]++
		})
	}
	for _, b := range doctest.Blocks(t, "..", "json") {
		t.Run(fmt.Sprintf("%s:%d", b.File, b.Line), func(t *testing.T) {
			checkDocResult(t, b, provisionJSON([]byte(b.Text)))
			ran["json"]++
		})
	}
	t.Logf("doc examples run: %v", ran)
	for _, kind := range []string{"", "site", "rate_limit", "json"} {
		if ran[kind] == 0 {
			t.Errorf("no documentation example of kind %q ran: the extraction is broken", kind)
		}
	}
}

// checkDocResult fails t unless err is what block b asks for: nil, or an
// error containing its WantErr.
func checkDocResult(t *testing.T, b doctest.Block, err error) {
	t.Helper()
	switch {
	case b.WantErr == "" && err != nil:
		t.Errorf("%v: %v", b, err)
	case b.WantErr != "" && err == nil:
		t.Errorf("%v: want an error containing %q, got none", b, b.WantErr)
	case b.WantErr != "" && !strings.Contains(err.Error(), b.WantErr):
		t.Errorf("%v: error %q, want one containing %q", b, err, b.WantErr)
	}
}

// docWrappers are the lines around a fragment of each kind of ```caddyfile
// block that make it a whole Caddyfile, as a reader pastes it: into a site
// block, or into the rate_limit block of one. Each is in `caddy fmt` form.
var docWrappers = map[string]struct{ open, close string }{
	"":           {"", ""},
	"site":       {":8080 {\n", "}\n"},
	"rate_limit": {":8080 {\n\trate_limit {\n", "\t}\n}\n"},
}

// docCaddyfile returns block b as the whole Caddyfile the tests adapt, and
// the depth of b's lines in it: a fragment goes into its wrapper with one
// tab more on every line for each level, as `caddy fmt` indents it there.
// It fails on a syntax block, which is not a Caddyfile, and an unknown kind.
func docCaddyfile(b doctest.Block) (input string, depth int, err error) {
	w, ok := docWrappers[b.Kind]
	if !ok {
		return "", 0, fmt.Errorf("%v: unknown kind %q: want none, site, rate_limit or syntax", b, b.Kind)
	}
	depth = strings.Count(w.open, "\n")
	indent := strings.Repeat("\t", depth)
	var sb strings.Builder
	sb.WriteString(w.open)
	for _, line := range strings.SplitAfter(b.Text, "\n") {
		if strings.TrimSpace(line) != "" {
			sb.WriteString(indent)
		}
		sb.WriteString(line)
	}
	sb.WriteString(w.close)
	return sb.String(), depth, nil
}

// TestDocCaddyfilesFormatted checks that every ```caddyfile block of the
// documentation, and Caddyfile.example, is in `caddy fmt` form: Caddy warns
// "Caddyfile input is not formatted" about a Caddyfile that
// caddyfile.Format changes, and a reader who pastes an example should not
// see that. Format indents with tabs, one per level of braces; writes one
// space between the tokens of a line, and before a comment that follows
// them (so no column alignment); keeps at most one blank line in a row and
// none after "{" or before "}"; and puts an opening brace followed by a
// comment at the end of its line, the comment on the next.
//
// A fragment (site, rate_limit) is checked where a reader pastes it: in
// its wrapper, indented to its depth (docCaddyfile), the Caddyfile that
// TestDocExamples adapts, and is compared as Caddy compares it. Formatting
// the fragment alone would indent it at depth 0 and apply rules Format
// keeps for the top level (a brace on its own line after an import, a
// token after "}" on the same line): close to the same check, but not
// what Caddy sees. The wrapper's lines are formatted already, so the whole
// is formatted when the fragment is; the message shows the fragment as it
// should read, taken back out of the formatted whole.
//
// A syntax block is a synopsis with <placeholders>, not a Caddyfile, that
// the tests do not run: its aligned columns are its point, and it stays
// unformatted, but it indents with tabs like the examples.
//
// testdata/*.caddyfile need no check here: TestAdaptGolden fails on any
// warning of the adapter, the formatting one included.
func TestDocCaddyfilesFormatted(t *testing.T) {
	checked := 0
	for _, b := range doctest.Blocks(t, "..", "caddyfile") {
		if b.Kind == "syntax" {
			for i, line := range strings.Split(b.Text, "\n") {
				if strings.HasPrefix(strings.TrimLeft(line, "\t"), " ") {
					t.Errorf("%v: line %d indents with spaces: use tabs, as in the examples", b, i+1)
				}
			}
			continue
		}
		input, depth, err := docCaddyfile(b)
		if err != nil {
			t.Error(err)
			continue
		}
		if got := string(caddyfile.Format([]byte(input))); got != input {
			t.Errorf("%v: not in caddy fmt form; it should read:\n%s", b, unwrapDoc(got, depth))
		}
		checked++
	}
	example, err := os.ReadFile("../Caddyfile.example")
	if err != nil {
		t.Fatal(err)
	}
	if got := caddyfile.Format(example); !bytes.Equal(got, example) {
		t.Errorf("Caddyfile.example: not in caddy fmt form; it should read:\n%s", got)
	}
	if checked == 0 {
		t.Error("no Caddyfile example checked: the extraction is broken")
	}
}

// unwrapDoc takes a fragment at depth back out of the formatted whole
// Caddyfile: without the wrapper's lines, and one tab less per level. It
// returns the whole when the fragment did not stay inside its wrapper.
func unwrapDoc(formatted string, depth int) string {
	lines := strings.Split(strings.TrimSuffix(formatted, "\n"), "\n")
	if depth == 0 || len(lines) < 2*depth {
		return formatted
	}
	indent := strings.Repeat("\t", depth)
	var sb strings.Builder
	for _, line := range lines[depth : len(lines)-depth] {
		if line != "" && !strings.HasPrefix(line, indent) {
			return formatted
		}
		sb.WriteString(strings.TrimPrefix(line, indent))
		sb.WriteByte('\n')
	}
	return sb.String()
}

// adaptAndProvision adapts a Caddyfile and provisions every rate_limit
// handler in the resulting config. A warning counts as an error, that the
// input is not in `caddy fmt` form too (TestDocCaddyfilesFormatted says
// how it should read).
func adaptAndProvision(input string) error {
	out, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(input), map[string]any{"filename": "Caddyfile"})
	if err != nil {
		return err
	}
	if len(warnings) > 0 {
		w := warnings[0]
		return fmt.Errorf("%s:%d: warning: %s", w.File, w.Line, w.Message)
	}
	var cfg any
	if err := json.Unmarshal(out, &cfg); err != nil {
		return err
	}
	handlers := rateLimitHandlers(cfg, nil)
	if len(handlers) == 0 {
		return errors.New("the adapted config has no rate_limit handler")
	}
	for _, h := range handlers {
		raw, err := json.Marshal(h)
		if err != nil {
			return err
		}
		if err := provisionJSON(raw); err != nil {
			return fmt.Errorf("adapted handler %s: %w", raw, err)
		}
	}
	return nil
}

// rateLimitHandlers appends to found every JSON object in v whose
// "handler" is "rate_limit".
func rateLimitHandlers(v any, found []map[string]any) []map[string]any {
	switch v := v.(type) {
	case map[string]any:
		if v["handler"] == "rate_limit" {
			return append(found, v)
		}
		for _, e := range v {
			found = rateLimitHandlers(e, found)
		}
	case []any:
		for _, e := range v {
			found = rateLimitHandlers(e, found)
		}
	}
	return found
}

// provisionJSON decodes a rate_limit handler's JSON as Caddy decodes a
// module's (unknown fields are errors), then provisions, validates and
// cleans it up. A Redis store is provisioned too: nothing is dialled at
// load.
func provisionJSON(raw []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return err
	}
	if string(fields["handler"]) != `"rate_limit"` {
		return fmt.Errorf(`want "handler": "rate_limit", got %s`, fields["handler"])
	}
	delete(fields, "handler")
	raw, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	h := new(Handler)
	if err := caddy.StrictUnmarshalJSON(raw, h); err != nil {
		return err
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	err = h.Provision(ctx)
	if err == nil {
		err = h.Validate()
	}
	if cerr := h.Cleanup(); err == nil {
		err = cerr
	}
	return err
}
