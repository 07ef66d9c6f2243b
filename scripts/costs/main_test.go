package main

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestKeepWithin: -record keeps the recorded value of a figure within its
// tolerance, and writes the measured value of one that moved past it,
// either way, or that has no record.
func TestKeepWithin(t *testing.T) {
	records := map[string]record{
		"noise": {value: 100, slack: 3, rel: inf},
		"grew":  {value: 100, slack: 3, rel: inf},
		"fell":  {value: 100, slack: 3, rel: inf},
		"edge":  {value: 100, slack: 3, rel: inf},
		"tenth": {value: 50, slack: inf, rel: 0.05},
		"kept":  {value: 7, slack: inf, rel: 0.05},
	}
	measured := [][]figure{{
		{name: "noise", value: 102},
		{name: "grew", value: 104},
		{name: "fell", value: 90},
		{name: "edge", value: 97},
		{name: "new", value: 5},
	}, {
		{name: "tenth", value: 52.6},
		{name: "kept", value: 7.3},
		{name: "skipped", skipped: "no valgrind"},
	}}
	keepWithin(measured, records)
	want := map[string]float64{"noise": 100, "grew": 104, "fell": 90, "edge": 100, "new": 5, "tenth": 52.6, "kept": 7}
	for _, fs := range measured {
		for _, f := range fs {
			if f.skipped != "" {
				continue
			}
			if f.value != want[f.name] {
				t.Errorf("%s: %v, want %v", f.name, f.value, want[f.name])
			}
		}
	}
}

// inf is a tolerance part a row does not set.
var inf = math.Inf(1)

// TestRecordIsRendered: docs/costs.md is what -record writes from its own
// rows, so that its text and the command's stay one.
func TestRecordIsRendered(t *testing.T) {
	path := filepath.Join("..", "..", recordFile)
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	measured := make([][]figure, len(sources))
	section := -1
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if title, ok := strings.CutPrefix(line, "## "); ok {
			section = -1
			for i, s := range sources {
				if s.title == title {
					section = i
				}
			}
			if section < 0 {
				t.Fatalf("section %q is no source's", title)
			}
			continue
		}
		if m := rowRE.FindStringSubmatch(line); m != nil && section >= 0 {
			v, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				t.Fatal(err)
			}
			measured[section] = append(measured[section], figure{name: m[1], value: v})
		}
	}
	if got := render(measured); !bytes.Equal(got, text) {
		t.Errorf("%s is not what -record writes from its rows; run go run ./scripts/costs -record -all, or change render", recordFile)
		gl, tl := strings.Split(string(got), "\n"), strings.Split(string(text), "\n")
		for i := 0; i < len(gl) && i < len(tl); i++ {
			if gl[i] != tl[i] {
				t.Logf("first difference, line %d:\nrender: %s\nfile:   %s", i+1, gl[i], tl[i])
				break
			}
		}
	}
}
