package caddymodule

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func TestUnmarshalCaddyfile(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  string // the handler as JSON
	}{
		{
			name: "minimal zone",
			input: `rate_limit {
				zone api {
					window 1m
					limit 100
				}
			}`,
			want: `{"rate_limits":{"api":{"window":60000000000,"limit":100}}}`,
		},
		{
			name: "every zone subdirective",
			input: `rate_limit {
				zone api {
					key         {http.request.header.X-API-Key}
					window      1m
					sub_window  5s
					limit       100
					algorithm   strict
					cost        2
					ipv4_prefix 24
					ipv6_prefix 64
					match {
						path /api/*
						method GET
					}
				}
			}`,
			want: `{"rate_limits":{"api":{"match":[{"method":["GET"],"path":["/api/*"]}],` +
				`"key":"{http.request.header.X-API-Key}","window":60000000000,"sub_window":5000000000,` +
				`"limit":100,"algorithm":"strict","cost":2,"ipv4_prefix":24,"ipv6_prefix":64}}}`,
		},
		{
			name: "every handler subdirective",
			input: `rate_limit {
				zone a {
					window 10s
					limit 5
				}
				store memory
				headers both
				max_keys 5000
				sweep_interval 30s
				jitter 0.2
				dry_run
				log_key
			}`,
			want: `{"rate_limits":{"a":{"window":10000000000,"limit":5}},"headers":"both",` +
				`"max_keys":5000,"sweep_interval":30000000000,"jitter":0.2,"dry_run":true,"log_key":true}`,
		},
		{
			name: "caddy-ratelimit syntax: events, day durations",
			input: `rate_limit {
				zone static_example {
					key    static
					events 100
					window 1d
				}
				zone dynamic_example {
					key    {http.request.remote.host}
					events 2
					window 5s
				}
			}`,
			want: `{"rate_limits":{"dynamic_example":{"key":"{http.request.remote.host}","window":5000000000,"limit":2},` +
				`"static_example":{"key":"static","window":86400000000000,"limit":100}}}`,
		},
		{
			name: "several match blocks are alternatives",
			input: `rate_limit {
				zone z {
					window 1m
					limit 1
					match {
						path /a
					}
					match {
						path /b
					}
				}
			}`,
			want: `{"rate_limits":{"z":{"match":[{"path":["/a"]},{"path":["/b"]}],"window":60000000000,"limit":1}}}`,
		},
		{
			name: "log algorithm",
			input: `rate_limit {
				zone login {
					window 15m
					limit 5
					algorithm log
				}
			}`,
			want: `{"rate_limits":{"login":{"window":900000000000,"limit":5,"algorithm":"log"}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Handler
			if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tt.input)); err != nil {
				t.Fatalf("UnmarshalCaddyfile: %v", err)
			}
			got, err := json.Marshal(h)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestUnmarshalCaddyfileErrors(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  string // a part of the error
		line  int
	}{
		{"argument after directive", "rate_limit foo {\n}", "wrong argument count", 1},
		{"no zone", "rate_limit {\n}", "no zone defined", 2},
		{"unknown subdirective", "rate_limit {\n\tburst 5\n}", `unknown subdirective "burst"`, 2},
		{"distributed", "rate_limit {\n\tzone a {\n\t\twindow 1m\n\t\tlimit 1\n\t}\n\tdistributed\n}", "store redis", 6},
		{"storage", "rate_limit {\n\tstorage file_system /tmp\n}", "store redis", 2},
		{"unknown store", "rate_limit {\n\tstore etcd\n}", `unknown store "etcd"`, 2},
		{"store without kind", "rate_limit {\n\tstore\n}", "wrong argument count", 2},
		{"duplicate headers", "rate_limit {\n\theaders ietf\n\theaders both\n}", "duplicate subdirective headers", 3},
		{"bad headers", "rate_limit {\n\theaders fancy\n}", `unknown headers mode "fancy"`, 2},
		{"headers two args", "rate_limit {\n\theaders ietf both\n}", "wrong argument count", 2},
		{"max_keys zero", "rate_limit {\n\tmax_keys 0\n}", "max_keys: want a positive integer", 2},
		{"max_keys word", "rate_limit {\n\tmax_keys lots\n}", `got "lots"`, 2},
		{"max_keys huge", "rate_limit {\n\tmax_keys 99999999999\n}", "too large", 2},
		{"sweep_interval bad", "rate_limit {\n\tsweep_interval soon\n}", "sweep_interval: want a positive duration", 2},
		{"sweep_interval negative", "rate_limit {\n\tsweep_interval -1s\n}", "want a positive duration", 2},
		{"jitter negative", "rate_limit {\n\tjitter -0.5\n}", "jitter: want a fraction", 2},
		{"jitter word", "rate_limit {\n\tjitter some\n}", "jitter: want a fraction", 2},
		{"jitter NaN", "rate_limit {\n\tjitter NaN\n}", "jitter: want a fraction", 2},
		{"jitter over 1", "rate_limit {\n\tjitter 1e10\n}", "jitter: want a fraction from 0 to 1", 2},
		{"dry_run with argument", "rate_limit {\n\tdry_run yes\n}", "wrong argument count", 2},
		{"log_key with argument", "rate_limit {\n\tlog_key true\n}", "wrong argument count", 2},
		{"duplicate dry_run", "rate_limit {\n\tdry_run\n\tdry_run\n}", "duplicate subdirective dry_run", 3},
		{"zone without name", "rate_limit {\n\tzone {\n\t}\n}", "wrong argument count", 2},
		{"zone with two names", "rate_limit {\n\tzone a b {\n\t}\n}", "wrong argument count", 2},
		{"duplicate zone", "rate_limit {\n\tzone a {\n\t\twindow 1m\n\t\tlimit 1\n\t}\n\tzone a {\n\t}\n}", `duplicate zone "a"`, 6},
		{"zone without window", "rate_limit {\n\tzone a {\n\t\tlimit 1\n\t}\n}", `zone "a": window is required, at Testfile:2`, 2},
		{"zone without limit", "rate_limit {\n\tzone a {\n\t\twindow 1m\n\t}\n}", `zone "a": limit is required`, 2},
		{"zone unknown subdirective", "rate_limit {\n\tzone a {\n\t\trate 5r/s\n\t}\n}", `zone "a": unknown subdirective "rate"`, 3},
		{"zone duplicate window", "rate_limit {\n\tzone a {\n\t\twindow 1m\n\t\twindow 2m\n\t}\n}", `zone "a": duplicate window`, 4},
		{"limit and events", "rate_limit {\n\tzone a {\n\t\tlimit 5\n\t\tevents 5\n\t}\n}", "limit and events are the same setting", 4},
		{"duplicate key", "rate_limit {\n\tzone a {\n\t\tkey x\n\t\tkey y\n\t}\n}", "duplicate key", 4},
		{"empty key", "rate_limit {\n\tzone a {\n\t\tkey \"\"\n\t}\n}", "key must not be empty", 3},
		{"key two args", "rate_limit {\n\tzone a {\n\t\tkey {remote_host} {path}\n\t}\n}", "wrong argument count", 3},
		{"window bad", "rate_limit {\n\tzone a {\n\t\twindow minute\n\t}\n}", `window: want a positive duration such as 1m or 30s, got "minute"`, 3},
		{"window zero", "rate_limit {\n\tzone a {\n\t\twindow 0s\n\t}\n}", "window: want a positive duration", 3},
		{"window missing value", "rate_limit {\n\tzone a {\n\t\twindow\n\t}\n}", "wrong argument count", 3},
		{"sub_window bad", "rate_limit {\n\tzone a {\n\t\tsub_window x\n\t}\n}", "sub_window: want a positive duration", 3},
		{"sub_window not dividing", "rate_limit {\n\tzone a {\n\t\twindow 1m\n\t\tsub_window 7s\n\t\tlimit 5\n\t}\n}", "sub_window: 7s does not divide the window 1m0s", 4},
		{"limit negative", "rate_limit {\n\tzone a {\n\t\tlimit -3\n\t}\n}", "limit: want a positive integer", 3},
		{"events word", "rate_limit {\n\tzone a {\n\t\tevents many\n\t}\n}", "events: want a positive integer", 3},
		{"limit too large for log", "rate_limit {\n\tzone a {\n\t\twindow 1m\n\t\tlimit 5000\n\t\talgorithm log\n\t}\n}", "too large for the log algorithm", 4},
		{"unknown algorithm", "rate_limit {\n\tzone a {\n\t\twindow 1m\n\t\tlimit 5\n\t\talgorithm leaky\n\t}\n}", `unknown algorithm "leaky"`, 5},
		{"cost zero", "rate_limit {\n\tzone a {\n\t\tcost 0\n\t}\n}", "cost: want a positive integer", 3},
		{"cost above limit", "rate_limit {\n\tzone a {\n\t\twindow 1m\n\t\tlimit 5\n\t\tcost 6\n\t}\n}", "cost: 6 exceeds the limit 5", 5},
		{"ipv4_prefix too long", "rate_limit {\n\tzone a {\n\t\tipv4_prefix 33\n\t}\n}", "ipv4_prefix: want a prefix length from 0 to 32", 3},
		{"ipv6_prefix negative", "rate_limit {\n\tzone a {\n\t\tipv6_prefix -1\n\t}\n}", "ipv6_prefix: want a prefix length from 1 to 128", 3},
		{"ipv6_prefix zero", "rate_limit {\n\tzone a {\n\t\tipv6_prefix 0\n\t}\n}", `ipv6_prefix: want a prefix length from 1 to 128, got "0"`, 3},
		{"ipv6_prefix word", "rate_limit {\n\tzone a {\n\t\tipv6_prefix wide\n\t}\n}", `got "wide"`, 3},
		{"unknown matcher", "rate_limit {\n\tzone a {\n\t\tmatch {\n\t\t\tbogus x\n\t\t}\n\t}\n}", "getting matcher module 'bogus'", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Handler
			err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tt.input))
			if err == nil {
				t.Fatalf("no error; want one containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if at := ", at Testfile:" + strconv.Itoa(tt.line); !strings.Contains(err.Error(), at) {
				t.Errorf("error %q does not point at line %d", err, tt.line)
			}
		})
	}
}

func TestJSONRefusesDistributed(t *testing.T) {
	// Caddy decodes module JSON strictly: caddy-ratelimit's distributed and
	// storage fields are errors, not silently ignored.
	for _, field := range []string{"distributed", "storage"} {
		var h Handler
		err := caddy.StrictUnmarshalJSON([]byte(`{"rate_limits":{"a":{"window":"1m","limit":1}},"`+field+`":{}}`), &h)
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: error %v, want one naming the field", field, err)
		}
	}
}
