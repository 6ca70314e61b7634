package domains

// Service manages sending domains. Filled in by the domains work.
type Service struct{}
