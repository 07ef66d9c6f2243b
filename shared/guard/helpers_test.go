package guard

import "github.com/windowlimit/windowlimit/internal/zonetest"

// The zone helpers every test of the package uses.
var (
	epoch   = zonetest.Epoch
	newZone = zonetest.NewZone
)
