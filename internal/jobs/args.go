package jobs

// DeliverArgs asks the delivery engine to send one accepted email (to real,
// non-test recipients). The sending service inserts it in the transaction
// that accepts the email; scheduled sends carry ScheduledAt in InsertOpts.
type DeliverArgs struct {
	EmailID     string `json:"email_id"`
	WorkspaceID string `json:"workspace_id"`
}

// Kind names the job in the queue.
func (DeliverArgs) Kind() string { return "deliver" }
