package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"

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
			var input string
			switch b.Kind {
			case "":
				input = b.Text
			case "site":
				input = ":8080 {\n" + b.Text + "}\n"
			case "rate_limit":
				input = ":8080 {\nrate_limit {\n" + b.Text + "}\n}\n"
			case "syntax":
				if !strings.Contains(b.Text, "<") {
					t.Errorf("%v: a syntax block without <placeholders> is an example: give it a fence that runs it", b)
				}
				ran[b.Kind]++
				return
			default:
				t.Fatalf("%v: unknown kind %q: want none, site, rate_limit or syntax", b, b.Kind)
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

// adaptAndProvision adapts a Caddyfile and provisions every rate_limit
// handler in the resulting config. A warning counts as an error, except
// that the input is not in `caddy fmt` form: the documentation indents with
// spaces, which read the same everywhere, and a wrapped fragment is never
// formatted.
func adaptAndProvision(input string) error {
	out, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(input), map[string]any{"filename": "Caddyfile"})
	if err != nil {
		return err
	}
	for _, w := range warnings {
		if !strings.Contains(w.Message, "not formatted") {
			return fmt.Errorf("%s:%d: warning: %s", w.File, w.Line, w.Message)
		}
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
