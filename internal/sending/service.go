package sending

// Service is the send API's service (emails, batch, scheduling, idempotency,
// test addresses). Filled in by the sending work.
type Service struct{}
