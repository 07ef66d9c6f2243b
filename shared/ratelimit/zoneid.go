package ratelimit

import "strconv"

// ZoneID identifies the state of a zone across configuration reloads: its
// name and every setting that shapes its counters. A host that meets a
// zone's ZoneID again reuses the zone, with its counts; a changed ID
// means a fresh zone, never one read with another rule. rule must be
// normalized, so that a default written out and one left implicit give
// one ID; so do the options' (a zero MaxKeys or SweepInterval and the
// default written out). Of opts, only MaxKeys, SweepInterval, Ban and
// Scope shape the state.
func ZoneID(name string, rule Rule, opts Options) string {
	maxKeys, sweep := effectiveOptions(rule, opts)
	id := strconv.Quote(name) +
		" window=" + strconv.FormatInt(int64(rule.Window), 10) +
		" sub_window=" + strconv.FormatInt(int64(rule.SubWindow), 10) +
		" limit=" + strconv.FormatInt(rule.Limit, 10) +
		" cost=" + strconv.FormatInt(rule.Cost, 10) +
		" algorithm=" + rule.Algorithm.String() +
		" max_keys=" + strconv.Itoa(maxKeys) +
		" sweep_interval=" + strconv.FormatInt(int64(sweep), 10)
	id += banID(opts.Ban)
	if opts.Scope != "" {
		id += " scope=" + strconv.Quote(opts.Scope)
	}
	return id
}
