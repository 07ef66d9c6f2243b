package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/windowlimit/windowlimit/scripts/internal/command"
)

// A cmd is one command whose output holds figures. It runs once per run,
// however many figures read it, and its output is kept in the work
// directory as NAME.out.
type cmd struct {
	// name names the command in the table and in -slow NAME...: the part
	// before a colon is the command a derived one reads (accuracy:over
	// reads accuracy's output).
	name string
	dir  string   // where args run, relative to the module's root
	env  []string // added to the environment, KEY=VALUE; $WL_FIGURES_OUT is the work directory
	args []string
	// then rewrites the output, as a pipe after the command would (Go's
	// durations in seconds, a benchmark's medians added at its end).
	then func(out []byte) []byte
	// thenDoes says what then does, for the command's line.
	thenDoes string
	// from and derive make a derived command: derive reads from's
	// output (the least and most of a column, a difference, a reciprocal)
	// and prints the figure's own line; nothing is run.
	from   *cmd
	derive func(out []byte) []byte
}

// goTest returns go test with args in dir.
func goTest(name, dir string, env []string, args ...string) *cmd {
	return &cmd{name: name, dir: dir, env: env, args: append([]string{"go", "test"}, args...)}
}

// pipe sets what rewrites c's output, and what it does in a few words.
func (c *cmd) pipe(does string, then func(out []byte) []byte) *cmd {
	c.then, c.thenDoes = then, does
	return c
}

// script returns one of scripts/'s shell scripts with its arguments.
func script(name string, env []string, args ...string) *cmd {
	return &cmd{name: name, env: env, args: args}
}

// derived returns a command named NAME:WHAT that prints derive's reading
// of from's output.
func derived(from *cmd, what string, derive func(out []byte) []byte) *cmd {
	return &cmd{name: from.name + ":" + what, from: from, derive: derive}
}

// base returns the name of the command that runs: a derived command's
// source's.
func (c *cmd) base() string {
	name, _, _ := strings.Cut(c.name, ":")
	return name
}

// String returns the command as a shell line that does what it does.
func (c *cmd) String() string {
	if c.from != nil {
		return "(" + c.name + ", read from " + c.from.String() + ")"
	}
	var b strings.Builder
	if c.dir != "" {
		fmt.Fprintf(&b, "cd %s && ", c.dir)
	}
	for _, e := range c.env {
		b.WriteString(e + " ")
	}
	b.WriteString(command.Join(c.args))
	if c.then != nil {
		b.WriteString(" | (" + c.thenDoes + ")")
	}
	return b.String()
}

// output returns the command's output, running it the first time (or
// reading it from a work directory that already holds it). A command that
// fails is reported on stderr, and ok is false; its output is still read.
func (k *checker) output(c *cmd) (out []byte, ok bool) {
	path := filepath.Join(k.work, c.name+".out")
	if out, err := os.ReadFile(path); err == nil {
		return out, true
	}
	ok = true
	if c.from != nil {
		src, srcOK := k.output(c.from)
		out, ok = c.derive(src), srcOK
	} else {
		run := exec.Command(c.args[0], c.args[1:]...)
		run.Dir = c.dir
		run.Env = os.Environ()
		for _, e := range c.env {
			run.Env = append(run.Env, strings.ReplaceAll(e, "$WL_FIGURES_OUT", k.work))
		}
		var buf bytes.Buffer
		run.Stdout = &buf
		run.Stderr = &buf
		if err := run.Run(); err != nil {
			ok = false
			fmt.Fprintf(os.Stderr, "%s: command failed: %s: %v\n%s\n", c.name, c, err, command.Tail(buf.Bytes(), 20))
		}
		out = buf.Bytes()
		if c.then != nil {
			out = c.then(out)
		}
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", c.name, err)
		ok = false
	}
	return out, ok
}
