//go:build !race

package secretbox

const raceOn = false
