package ratelimit

import "strconv"

// Field identifies a setting the core checks. The hosts spell settings
// their own way (sub_window in a Caddyfile, subWindow in Traefik's
// dynamic configuration), so the core names a field by this identifier
// and each host turns it into its spelling with a Spelling.
type Field uint8

// The settings the core's errors name.
const (
	// FieldWindow is Rule.Window.
	FieldWindow Field = iota + 1
	// FieldSubWindow is Rule.SubWindow.
	FieldSubWindow
	// FieldLimit is Rule.Limit.
	FieldLimit
	// FieldCost is Rule.Cost.
	FieldCost
	// FieldAlgorithm is Rule.Algorithm.
	FieldAlgorithm
	// FieldMaxKeys is Options.MaxKeys.
	FieldMaxKeys
	// FieldSweepInterval is Options.SweepInterval.
	FieldSweepInterval
	// FieldName is the zone's name, which a Redis store puts in its keys.
	FieldName
	// FieldKeyPrefix is RedisOptions.KeyPrefix.
	FieldKeyPrefix
	// FieldDB is RedisSettings.DB.
	FieldDB
	// FieldPoolSize is RedisSettings.PoolSize.
	FieldPoolSize
	// FieldTLS is the TLS block of a Redis store.
	FieldTLS
	// FieldOnStoreError is the setting of the failure policy
	// (GuardOptions.OnError).
	FieldOnStoreError
)

// fieldNames are the names of the Go fields the identifiers stand for:
// what an error says when no host has spelled it.
var fieldNames = [...]string{
	FieldWindow:        "Window",
	FieldSubWindow:     "SubWindow",
	FieldLimit:         "Limit",
	FieldCost:          "Cost",
	FieldAlgorithm:     "Algorithm",
	FieldMaxKeys:       "MaxKeys",
	FieldSweepInterval: "SweepInterval",
	FieldName:          "Name",
	FieldKeyPrefix:     "KeyPrefix",
	FieldDB:            "DB",
	FieldPoolSize:      "PoolSize",
	FieldTLS:           "TLS",
	FieldOnStoreError:  "OnError",
}

// NumFields is one more than the largest Field: the length of a
// Spelling.
const NumFields = int(FieldOnStoreError) + 1

// String returns the name of the Go field f stands for.
func (f Field) String() string {
	if int(f) < len(fieldNames) && fieldNames[f] != "" {
		return fieldNames[f]
	}
	return "field(" + strconv.Itoa(int(f)) + ")"
}

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

func (e *FieldError) Error() string { return e.Field.String() + ": " + e.Msg }

// Spelling names each Field as one host's configuration does.
type Spelling [NumFields]string

// Name returns the spelling of f, or the name of its Go field when s has
// none.
func (s *Spelling) Name(f Field) string {
	if int(f) < len(s) && s[f] != "" {
		return s[f]
	}
	return f.String()
}

// Error returns err with the field of a *FieldError spelled by s, as
// "spelling: message"; any other error is returned unchanged. The core
// returns its *FieldError values unwrapped, so that a host checks them
// with a type assertion (which yaegi runs as compiled Go does).
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
