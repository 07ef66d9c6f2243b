package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// rewriteValue returns value written as like is: as many decimals, and
// thousands separated by commas if like's are.
func rewriteValue(value, like string) string {
	decimals := 0
	if i := strings.Index(like, "."); i >= 0 {
		decimals = len(like) - i - 1
	}
	s := strconv.FormatFloat(leadingNumber(value), 'f', decimals, 64)
	if !strings.Contains(like, ",") {
		return s
	}
	whole, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	for i, c := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 && whole[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if hasFrac {
		b.WriteString("." + frac)
	}
	return b.String()
}

// rewriteDoc replaces the first group of re's first match in the file
// doc with text (WL_FIGURES_REWRITE=1: a quiet run's times, rates and
// ratios into the docs; the prose around them is the writer's to read
// again).
func rewriteDoc(doc, re, text string) error {
	b, err := os.ReadFile(doc)
	if err != nil {
		return fmt.Errorf("rewrite %s: %w", doc, err)
	}
	m := compile(re).FindSubmatchIndex(b)
	if m == nil || m[2] < 0 {
		return nil
	}
	out := append(append(append([]byte{}, b[:m[2]]...), text...), b[m[3]:]...)
	if err := os.WriteFile(doc, out, 0o644); err != nil {
		return fmt.Errorf("rewrite %s: %w", doc, err)
	}
	return nil
}
