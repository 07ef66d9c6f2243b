package ratelimit

// Field names a setting that a check reports, by its Go field's name. The
// hosts spell settings their own way (sub_window in a Caddyfile,
// subWindow in Traefik's dynamic configuration), so an error names the
// field and each host turns it into its spelling with a Spelling. Other
// packages declare the fields of their own settings.
type Field string

// The settings the core's errors name.
const (
	// FieldWindow is Rule.Window.
	FieldWindow Field = "Window"
	// FieldSubWindow is Rule.SubWindow.
	FieldSubWindow Field = "SubWindow"
	// FieldLimit is Rule.Limit.
	FieldLimit Field = "Limit"
	// FieldCost is Rule.Cost.
	FieldCost Field = "Cost"
	// FieldAlgorithm is Rule.Algorithm.
	FieldAlgorithm Field = "Algorithm"
	// FieldMaxKeys is Options.MaxKeys.
	FieldMaxKeys Field = "MaxKeys"
	// FieldSweepInterval is Options.SweepInterval.
	FieldSweepInterval Field = "SweepInterval"
	// FieldName is the zone's name, which a remote store puts in its keys.
	FieldName Field = "Name"
)

// FieldError reports a bad value of one setting. Msg names no setting
// by its spelling: a setting it mentions besides Field is named in words
// ("the window"), so the host that spells Field has the whole message in
// its own terms.
type FieldError struct {
	// Field is the setting whose value is bad.
	Field Field
	// Msg says what is wrong with the value.
	Msg string
}

func (e *FieldError) Error() string { return string(e.Field) + ": " + e.Msg }

// Spelling names each Field as one host's configuration does.
type Spelling map[Field]string

// Name returns the spelling of f, or the name of its Go field when s has
// none.
func (s *Spelling) Name(f Field) string {
	if name := (*s)[f]; name != "" {
		return name
	}
	return string(f)
}

// Error returns err with the field of a *FieldError spelled by s, as
// "spelling: message"; any other error is returned unchanged. The core
// returns its *FieldError values unwrapped, so that a host checks them
// with a type assertion.
func (s *Spelling) Error(err error) error {
	if fe, ok := err.(*FieldError); ok {
		return &spelledError{msg: s.Name(fe.Field) + ": " + fe.Msg, err: fe}
	}
	return err
}

// spelledError is a *FieldError in a host's spelling.
type spelledError struct {
	msg string
	err *FieldError
}

func (e *spelledError) Error() string { return e.msg }

func (e *spelledError) Unwrap() error { return e.err }

// fieldError returns a *FieldError.
func fieldError(f Field, msg string) error {
	return &FieldError{Field: f, Msg: msg}
}
