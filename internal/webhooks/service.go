package webhooks

// Service manages webhook endpoints and dispatch. Filled in by the webhooks work.
type Service struct{}
