package main

import "regexp"

// A table collects the figures in the order they are checked and
// printed, each of the tier last set.
type table struct {
	figs []figure
	tier tier
}

// add adds a figure: kind, its name, the doc and the regular expression
// whose first group is the doc's value, the command and the one whose
// first group is each printed value.
func (t *table) add(kind, name, doc, docRE string, c *cmd, outRE string) {
	t.figs = append(t.figs, figure{kind: kind, name: name, tier: t.tier, doc: doc, docRE: docRE, cmd: c, outRE: outRE})
}

// addEach adds a figure whose outRE's group holds a list of values,
// separated by spaces.
func (t *table) addEach(kind, name, doc, docRE string, c *cmd, outRE string) {
	t.add(kind, name, doc, docRE, c, outRE)
	t.figs[len(t.figs)-1].split = true
}

// addQuoted adds a figure of a block the doc quotes whole (see
// figure.quoted).
func (t *table) addQuoted(kind, name, doc, docRE string, c *cmd, outRE string) {
	t.add(kind, name, doc, docRE, c, outRE)
	t.figs[len(t.figs)-1].quoted = true
}

// figures returns every figure, fast ones first.
func figures() []figure {
	t := &table{}
	t.tier = tierFast
	t.fast()
	t.tier = tierFull
	t.full()
	t.tier = tierSlow
	t.slow()
	return t.figs
}

// q returns text as a regular expression that matches it literally.
func q(text string) string { return regexp.QuoteMeta(text) }

// bm is the doc most figures are in.
const bm = "docs/benchmarks.md"

// yaegitest is the yaegi harness's module, where its benchmarks run.
const yaegitest = "scripts/yaegitest"

// noTests is go test's -run that runs no test, for a benchmark alone.
const noTests = "^$"
