//go:build race

package secretbox

// raceOn: the race detector drops a share of sync.Pool puts on purpose.
const raceOn = true
