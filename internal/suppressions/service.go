package suppressions

// Service serves the suppression routes. Filled in by the suppressions work.
type Service struct{}
