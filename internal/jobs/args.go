package jobs

import "github.com/riverqueue/river"

// DeliverArgs asks the delivery engine to send one accepted email (to real,
// non-test recipients). The sending service inserts it in the transaction
// that accepts the email; scheduled sends carry ScheduledAt in InsertOpts.
type DeliverArgs struct {
	EmailID     string `json:"email_id"`
	WorkspaceID string `json:"workspace_id"`
}

// Kind names the job in the queue.
func (DeliverArgs) Kind() string { return "deliver" }

// QueueDeliver is the queue deliver jobs run on, sized apart from the
// default queue because each job mostly waits on a remote SMTP server.
const QueueDeliver = "deliver"

// InsertOpts puts deliver jobs on their own queue whoever inserts them.
func (DeliverArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: QueueDeliver} }
