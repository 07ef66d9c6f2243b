package traefikplugin

import "errors"

// fieldError returns the error of a bad setting, named as in the dynamic
// configuration.
func fieldError(field, msg string) error {
	return errors.New(field + ": " + msg)
}
