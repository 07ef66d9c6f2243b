package httplimit

// FieldError reports a bad configuration value and names the setting.
type FieldError struct {
	// Field is the name of the setting as the user wrote it.
	Field string
	// Msg says what is wrong with the value.
	Msg string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }
