package dashboard

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/riverqueue/river"

	"mailroom/internal/apierr"
	"mailroom/internal/clock"
	"mailroom/internal/contacts"
	"mailroom/internal/jobs"
	"mailroom/internal/store"
)

func (x *Dashboard) audiences(w http.ResponseWriter, r *http.Request, s *session) error {
	as, err := x.d.Contacts.Audiences(r.Context(), s.key.WorkspaceID)
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "audiences", as)
	return nil
}

type audienceView struct {
	Audience contacts.Audience
	Members  []contacts.Member
	Counts   contacts.MemberCounts
	Status   string   // the members' filter
	Email    string   // a piece of the address to find
	Statuses []string // its choices
	Paged    bool     // a page past the first
	Next     string   // the older members' query string
}

// memberStatuses are the members list's filter's choices.
var memberStatuses = []string{contacts.StatusSubscribed, contacts.StatusUnsubscribed, contacts.StatusPending, contacts.StatusCleaned}

// audience shows an audience and a page of its members, newest first,
// filtered by status, with "Older →" continuing below the last.
func (x *Dashboard) audience(w http.ResponseWriter, r *http.Request, s *session) error {
	a, err := x.d.Contacts.Audience(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	q := r.URL.Query()
	v := audienceView{Audience: a, Status: q.Get("status"), Email: q.Get("email"), Statuses: memberStatuses}
	var pos *contacts.Position
	if after := q.Get("after"); after != "" {
		ms, id, err := parseCursor(after)
		if err != nil {
			return err
		}
		pos, v.Paged = &contacts.Position{At: ms, ID: id}, true
	}
	ms, counts, err := x.d.Contacts.Members(r.Context(), s.key.WorkspaceID, a.ID, contacts.MemberFilter{Status: v.Status, Email: v.Email}, listRows+1, 0, pos)
	if err != nil {
		return err
	}
	if len(ms) > listRows {
		ms = ms[:listRows]
		last := ms[len(ms)-1]
		v.Next = urlValues{"status": v.Status, "email": v.Email, "after": cursor(last.CreatedAt.UnixMilli(), last.ID)}.encode()
	}
	v.Members, v.Counts = ms, counts
	x.render(w, r, s, http.StatusOK, "audience", v)
	return nil
}

// createAudience is POST /v1/audiences from the list's form.
func (x *Dashboard) createAudience(w http.ResponseWriter, r *http.Request, s *session) error {
	a, err := x.d.Contacts.CreateAudience(r.Context(), s.key.WorkspaceID, r.PostForm.Get("name"), r.PostForm.Get("description"))
	if err != nil {
		return err
	}
	return redirect(w, r, "/audiences/"+url.PathEscape(a.ID)+"?ok=audience")
}

// importStale is how long a running import is believed: one not finished
// by then (its job failed again and again) shows as stopped.
const importStale = 15 * time.Minute

// importAttempts is how many times an import failing on the server is
// tried before it is recorded as failed.
const importAttempts = 3

// ImportWorker runs jobs.DashboardImportArgs: the import of a CSV taken by
// the dashboard, as one transaction of the contacts area. Run again after a
// crash, it imports the rows again only if the import's outcome was not
// recorded (the contacts import updates contacts it meets again).
type ImportWorker struct {
	river.WorkerDefaults[jobs.DashboardImportArgs]
	DB       *store.DB
	Contacts *contacts.Service
	Clock    clock.Clock
	Log      *slog.Logger
}

// Work runs the import and records its report, or why it failed.
func (w *ImportWorker) Work(ctx context.Context, job *river.Job[jobs.DashboardImportArgs]) error {
	j, rows, err := pendingImport(ctx, w.DB, job.Args.WorkspaceID, job.Args.ImportID)
	if err != nil || j == nil {
		return err
	}
	res, err := w.Contacts.Import(ctx, j.WorkspaceID, j.AudienceID, rows, j.DryRun)
	var report *contacts.ImportResult
	problem := ""
	if e, ok := apierr.As(err); ok && e.Status < 500 {
		problem = e.Message
	} else if err != nil && job.Attempt < importAttempts {
		return err // River tries again; the page shows it running meanwhile
	} else if err != nil {
		w.Log.Error("dashboard: import", "import", j.ID, "err", err)
		problem = "The import failed on the server; nothing was imported. Try again later."
	} else {
		report = &res
	}
	return finishImport(ctx, w.DB, j.ID, report, problem, w.Clock.Now())
}

type importView struct {
	Audience contacts.Audience
	Job      importJob
	Elapsed  string
	Lost     bool // running past importStale: its node stopped
}

// Refresh reloads the page each second while the import runs.
func (v importView) Refresh() int {
	if v.Job.Status == importRunning && !v.Lost {
		return 1
	}
	return 0
}

// importPage shows an import's progress, then its report.
func (x *Dashboard) importPage(w http.ResponseWriter, r *http.Request, s *session) error {
	ctx, wsID := r.Context(), s.key.WorkspaceID
	j, err := importByID(ctx, x.d.DB, wsID, r.PathValue("import"))
	if err != nil {
		return err
	}
	if j == nil || j.AudienceID != r.PathValue("id") {
		return errNotFound("import")
	}
	a, err := x.d.Contacts.Audience(ctx, wsID, j.AudienceID)
	if err != nil {
		return err
	}
	now := x.d.Clock.Now()
	end := now
	if j.FinishedAt != nil {
		end = *j.FinishedAt
	}
	v := importView{Audience: a, Job: *j, Elapsed: end.Sub(j.CreatedAt).Round(100 * time.Millisecond).String(),
		Lost: j.Status == importRunning && now.Sub(j.CreatedAt) > importStale}
	x.render(w, r, s, http.StatusOK, "import", v)
	return nil
}
