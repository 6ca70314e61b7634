package jobs

import (
	"encoding/json"

	"github.com/riverqueue/river"
)

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

// EmailRef names one email in a batch job.
type EmailRef struct {
	EmailID     string `json:"email_id"`
	WorkspaceID string `json:"workspace_id"`
}

// DeliverBatchArgs asks the delivery engine to send several accepted emails.
// The sending service inserts one per group commit for all the emails that
// commit accepted, so the queue pays one insert, fetch and completion per
// batch instead of per email. An email the batch defers gets its own
// DeliverArgs job at its retry time.
type DeliverBatchArgs struct {
	Emails []EmailRef `json:"emails"`
}

// Kind names the job in the queue.
func (DeliverBatchArgs) Kind() string { return "deliver_batch" }

// InsertOpts puts batches on the deliver queue.
func (DeliverBatchArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: QueueDeliver} }

// MaxDeliverBatch bounds the emails one batch job carries.
const MaxDeliverBatch = 100

// QueueMarketing is the lane marketing mail (broadcasts) is delivered on:
// its own queue with its own worker share and delivery slots, so that a
// broadcast of a hundred thousand never queues ahead of a transactional
// send on QueueDeliver.
const QueueMarketing = "marketing"

// MarketingBatchArgs asks the delivery engine to send several accepted
// marketing emails (one broadcast batch) on the marketing lane.
type MarketingBatchArgs struct {
	Emails []EmailRef `json:"emails"`
}

// marketingBatchJSON is MarketingBatchArgs as the queue stores it: a batch
// of one workspace (a broadcast's) names it once, then the email ids, about
// 60 bytes less per email than an EmailRef each; a mixed batch keeps Emails.
type marketingBatchJSON struct {
	Emails      []EmailRef `json:"emails,omitempty"`
	WorkspaceID string     `json:"workspace_id,omitempty"`
	EmailIDs    []string   `json:"email_ids,omitempty"`
}

// MarshalJSON writes the one-workspace form when it can.
func (a MarketingBatchArgs) MarshalJSON() ([]byte, error) {
	if len(a.Emails) == 0 {
		return []byte(`{"emails":[]}`), nil
	}
	out := marketingBatchJSON{WorkspaceID: a.Emails[0].WorkspaceID, EmailIDs: make([]string, len(a.Emails))}
	for i, e := range a.Emails {
		if e.WorkspaceID != out.WorkspaceID || out.WorkspaceID == "" {
			return json.Marshal(marketingBatchJSON{Emails: a.Emails})
		}
		out.EmailIDs[i] = e.EmailID
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads either form (and jobs queued before the short one).
func (a *MarketingBatchArgs) UnmarshalJSON(b []byte) error {
	var in marketingBatchJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	a.Emails = in.Emails
	for _, id := range in.EmailIDs {
		a.Emails = append(a.Emails, EmailRef{EmailID: id, WorkspaceID: in.WorkspaceID})
	}
	return nil
}

// Kind names the job in the queue.
func (MarketingBatchArgs) Kind() string { return "deliver_marketing" }

// InsertOpts puts marketing batches on their own queue.
func (MarketingBatchArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueMarketing}
}

// BroadcastArgs asks the broadcasts area to fan a broadcast out: render
// and hand over its pending recipients, batch by batch, until none is left
// or the broadcast is cancelled. Send inserts it (now, or at scheduled_at).
type BroadcastArgs struct {
	BroadcastID string `json:"broadcast_id"`
	WorkspaceID string `json:"workspace_id"`
}

// Kind names the job in the queue.
func (BroadcastArgs) Kind() string { return "broadcast_fanout" }

// QueueBroadcasts is the lane fan-outs run on. A fan-out holds its worker
// until its emails are delivered, so it must not take the workers of the
// marketing batches it waits for: with fan-outs on QueueMarketing, eight
// broadcasts at once held all eight workers and nothing was delivered
// (TestManyBroadcastsAtOnce).
const QueueBroadcasts = "broadcasts"

// InsertOpts puts fan-outs on their own queue.
func (BroadcastArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: QueueBroadcasts} }

// DashboardImportArgs asks the dashboard to run a CSV import it took: the
// rows wait in dashboard_imports, committed with this job.
type DashboardImportArgs struct {
	ImportID    string `json:"import_id"`
	WorkspaceID string `json:"workspace_id"`
}

// Kind names the job in the queue.
func (DashboardImportArgs) Kind() string { return "dashboard_import" }

// QueueAutomations is the lane automation runs step on, apart from the
// default queue so that ten thousand runs started by one import never
// queue ahead of webhooks and scheduled sends.
const QueueAutomations = "automations"

// AutomationRunArgs asks the automations area to carry runs of one
// workspace forward from where each stands (its committed position), step
// by step, until it waits or ends: RunID alone, or RunIDs (the runs one
// batch of contact events started, or whose waits end in the same second).
// It is inserted with the runs and at each wait (scheduled at the wait's
// end); a repeat finds nothing left to do.
type AutomationRunArgs struct {
	RunID       string   `json:"run_id,omitempty"`
	RunIDs      []string `json:"run_ids,omitempty"`
	WorkspaceID string   `json:"workspace_id"`
}

// Kind names the job in the queue.
func (AutomationRunArgs) Kind() string { return "automation_run" }

// InsertOpts puts run jobs on their own queue.
func (AutomationRunArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueAutomations}
}
