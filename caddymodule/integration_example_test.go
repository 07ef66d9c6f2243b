package caddymodule

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Caddyfile.example, moved to free ports, serves what README's Caddy
// quickstart shows: JSON bodies that end with a newline, the 429's naming
// the zone.
func TestIntegrationCaddyfileExample(t *testing.T) {
	example, err := os.ReadFile("../Caddyfile.example")
	if err != nil {
		t.Fatal(err)
	}
	tc := newTester(t)
	port := freePort(t)
	config := "{\n\tadmin localhost:" + strconv.Itoa(adminPort) + "\n\thttp_port " + strconv.Itoa(port) + "\n}\n" +
		strings.Replace(string(example), "\n:8080 {\n", "\n:"+strconv.Itoa(port)+" {\n", 1)
	if config == string(example) || !strings.Contains(config, ":"+strconv.Itoa(port)+" {") {
		t.Fatal("Caddyfile.example has no site :8080 to move")
	}
	tc.InitServer(config, "caddyfile")
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/api/items"
	for i := 1; i <= 10; i++ {
		resp, body := get(t, tc, url)
		if resp.StatusCode != 200 || body != "{\"items\": []}\n" {
			t.Fatalf("request %d: %d %q, want 200 %q", i, resp.StatusCode, body, "{\"items\": []}\n")
		}
	}
	resp, body := get(t, tc, url)
	var got struct {
		Error      string `json:"error"`
		Zone       string `json:"zone"`
		RetryAfter int    `json:"retry_after_seconds"`
	}
	if resp.StatusCode != 429 || !strings.HasSuffix(body, "}\n") || json.Unmarshal([]byte(body), &got) != nil ||
		got.Zone != "api" || got.RetryAfter < 1 {
		t.Fatalf("11th request: %d %q, want 429 and a JSON body naming zone api, ending with a newline", resp.StatusCode, body)
	}
}
