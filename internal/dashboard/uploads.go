package dashboard

import (
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/contacts"
	"mailroom/internal/ids"
)

// The audience's CSV import in steps: the file is uploaded and kept
// (dashboard_uploads), its columns are shown with the role the import
// would give each, the person changes them, checks (a dry run of the same
// import), then imports with the chosen mapping.

// uploadTTL is how long an uploaded file is kept when it is not imported.
const uploadTTL = time.Hour

// previewRows is how many of the file's rows the mapping page shows.
const previewRows = 5

// refusedShown is how many refused rows a check lists.
const refusedShown = 10

// roleLabels names the roles a column can be given, in the select's order.
var roleLabels = map[string]string{
	"email": "Email address", "first_name": "First name", "last_name": "Last name", "tags": "Tags",
	"status": "Status", "subscribed": "Subscribed (yes/no)", "unsubscribed": "Unsubscribed (yes/no)",
	"attribute": "Merge field", "ignore": "Ignore",
}

// oneColumnRoles are the roles at most one column may have.
var oneColumnRoles = []string{"email", "first_name", "last_name", "status", "subscribed", "unsubscribed"}

// importContacts takes a CSV file from the audience's form, reads it as
// POST /v1/audiences/{id}/contacts reads a CSV body (same limits; a file
// that does not parse is refused here) and keeps it for the mapping page.
func (x *Dashboard) importContacts(w http.ResponseWriter, r *http.Request, s *session) error {
	ctx, wsID := r.Context(), s.key.WorkspaceID
	a, err := x.d.Contacts.Audience(ctx, wsID, r.PathValue("id"))
	if err != nil {
		return err
	}
	if r.MultipartForm == nil || len(r.MultipartForm.File["file"]) == 0 {
		return apierr.InvalidRequest("Choose a CSV file to import.")
	}
	fh := r.MultipartForm.File["file"][0]
	if fh.Size > contacts.MaxImportBytes {
		return contacts.ErrImportTooLarge()
	}
	f, err := fh.Open()
	if err != nil {
		return err
	}
	defer f.Close()
	body, err := io.ReadAll(io.LimitReader(f, contacts.MaxImportBytes+1))
	if err != nil {
		return err
	}
	if len(body) > contacts.MaxImportBytes {
		return contacts.ErrImportTooLarge()
	}
	p, err := contacts.PreviewCSV(body, 0)
	if err != nil {
		return err
	}
	now := x.d.Clock.Now()
	u := upload{ID: ids.New("upl") + ids.Secret(8), WorkspaceID: wsID, SessionID: s.row.hash, AudienceID: a.ID,
		Filename: fh.Filename, Content: p.Text}
	if err := insertUpload(ctx, x.d.DB, u, now, now.Add(uploadTTL)); err != nil {
		return err
	}
	return redirect(w, r, "/audiences/"+url.PathEscape(a.ID)+"/uploads/"+url.PathEscape(u.ID))
}

// mappingView is the mapping page's: the file's columns with their roles,
// its first rows, and after a check what the import would do.
type mappingView struct {
	Audience contacts.Audience
	Upload   upload
	Columns  []columnView
	Rows     [][]string
	Total    int
	Roles    []roleOption
	Problem  string                 // why the chosen mapping cannot be used
	Report   *contacts.ImportResult // the check's, nil before one
	Refused  []contacts.RowError    // the first refused rows of the check
	More     int                    // refused rows not listed
	Checked  string                 // the roles the report is for (checkedRoles)
	Changed  bool                   // Import was pressed with roles other than the checked ones
}

// checkedRoles is the columns' roles in order: what a check was run with,
// so that Import imports only what was checked.
func (v mappingView) checkedRoles() string {
	roles := make([]string, len(v.Columns))
	for i, c := range v.Columns {
		roles[i] = c.Role
	}
	return strings.Join(roles, ",")
}

type columnView struct {
	Index      int
	Name, Role string
	Proposed   string // what the import makes of it by its name
	Samples    string // the first rows' values, for the select's description
}

type roleOption struct{ Value, Label string }

// uploadOf reads the request's upload with its file's preview; another
// session's or audience's upload, or one imported or expired, is not found.
func (x *Dashboard) uploadOf(r *http.Request, s *session) (mappingView, error) {
	ctx, wsID := r.Context(), s.key.WorkspaceID
	u, err := uploadByID(ctx, x.d.DB, wsID, s.row.hash, r.PathValue("upload"), x.d.Clock.Now())
	if err != nil {
		return mappingView{}, err
	}
	if u == nil || u.AudienceID != r.PathValue("id") {
		return mappingView{}, apierr.NotFound("upload").WithNext("An uploaded file is kept for an hour until it is imported: upload it again.")
	}
	a, err := x.d.Contacts.Audience(ctx, wsID, u.AudienceID)
	if err != nil {
		return mappingView{}, err
	}
	p, err := contacts.PreviewCSV(u.Content, previewRows)
	if err != nil {
		return mappingView{}, err
	}
	v := mappingView{Audience: a, Upload: *u, Rows: p.Rows, Total: p.Total}
	for _, role := range contacts.ImportRoles {
		v.Roles = append(v.Roles, roleOption{Value: role, Label: roleLabels[role]})
	}
	for i, c := range p.Columns {
		var samples []string
		for _, row := range p.Rows {
			if i < len(row) && strings.TrimSpace(row[i]) != "" && len(samples) < 3 {
				samples = append(samples, row[i])
			}
		}
		v.Columns = append(v.Columns, columnView{Index: i, Name: c, Role: p.Proposed[i], Proposed: p.Proposed[i], Samples: strings.Join(samples, " · ")})
	}
	return v, nil
}

// chosen applies the form's role.<index> choices to v's columns and reads
// them as a mapping; a choice the import cannot follow is v.Problem.
func chosen(r *http.Request, v *mappingView) contacts.ImportMapping {
	m := contacts.ImportMapping{Roles: map[string]string{}}
	by := map[string][]string{}
	for i := range v.Columns {
		c := &v.Columns[i]
		if role := r.PostForm.Get("role." + strconv.Itoa(c.Index)); role != "" {
			c.Role = role
		}
		if _, ok := roleLabels[c.Role]; !ok {
			v.Problem = "Choose what column " + strconv.Quote(c.Name) + " holds."
			c.Role = c.Proposed
		}
		m.Roles[c.Name] = c.Role
		by[c.Role] = append(by[c.Role], strconv.Quote(c.Name))
	}
	if v.Problem != "" {
		return m
	}
	if len(by["email"]) == 0 {
		v.Problem = "Choose the column that holds the email address."
		return m
	}
	for _, role := range oneColumnRoles {
		if cols := by[role]; len(cols) > 1 {
			v.Problem = "Only one column can be " + roleLabels[role] + ", not " + strings.Join(cols, " and ") + ". Choose one; make the others merge fields or ignore them."
			return m
		}
	}
	return m
}

// uploadPage shows the file's columns with the role proposed for each.
func (x *Dashboard) uploadPage(w http.ResponseWriter, r *http.Request, s *session) error {
	v, err := x.uploadOf(r, s)
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "mapping", v)
	return nil
}

// checkUpload runs the import with the chosen mapping as a dry run (the
// contacts import writes nothing) and shows what it would do.
func (x *Dashboard) checkUpload(w http.ResponseWriter, r *http.Request, s *session) error {
	v, m, ok, err := x.chosenUpload(w, r, s)
	if !ok || err != nil {
		return err
	}
	return x.check(w, r, s, v, m)
}

// chosenUpload reads the upload and the mapping the form chose; a mapping
// that cannot be used is answered here with the page and its problem (ok
// false).
func (x *Dashboard) chosenUpload(w http.ResponseWriter, r *http.Request, s *session) (mappingView, contacts.ImportMapping, bool, error) {
	v, err := x.uploadOf(r, s)
	if err != nil {
		return v, contacts.ImportMapping{}, false, err
	}
	m := chosen(r, &v)
	if v.Problem != "" {
		x.render(w, r, s, http.StatusBadRequest, "mapping", v)
		return v, m, false, nil
	}
	return v, m, true, nil
}

// check runs the dry run and shows the mapping page with its report.
func (x *Dashboard) check(w http.ResponseWriter, r *http.Request, s *session, v mappingView, m contacts.ImportMapping) error {
	rows, err := contacts.ParseCSV(v.Upload.Content, m)
	if err != nil {
		return err
	}
	res, err := x.d.Contacts.Import(r.Context(), s.key.WorkspaceID, v.Audience.ID, rows, true)
	if err != nil {
		return err
	}
	v.Report, v.Refused, v.Checked = &res, res.Errors, v.checkedRoles()
	if len(v.Refused) > refusedShown {
		v.Refused, v.More = v.Refused[:refusedShown], len(v.Refused)-refusedShown
	}
	x.render(w, r, s, http.StatusOK, "mapping", v)
	return nil
}

// runUpload imports the file with the checked mapping: its rows are
// committed with the job that imports them (ImportWorker) and the upload
// is deleted; the answer is the import's page. Roles other than the
// checked ones are checked instead, not imported.
func (x *Dashboard) runUpload(w http.ResponseWriter, r *http.Request, s *session) error {
	v, m, ok, err := x.chosenUpload(w, r, s)
	if !ok || err != nil {
		return err
	}
	if r.PostForm.Get("checked") != v.checkedRoles() {
		// Changed after the check (or never checked): check what is chosen now.
		v.Changed = true
		return x.check(w, r, s, v, m)
	}
	rows, err := contacts.ParseCSV(v.Upload.Content, m)
	if err != nil {
		return err
	}
	j := importJob{ID: ids.New("imp"), WorkspaceID: s.key.WorkspaceID, AudienceID: v.Audience.ID, Filename: v.Upload.Filename,
		Rows: len(rows), Status: importRunning, CreatedAt: x.d.Clock.Now()}
	if err := insertImportOf(r.Context(), x.d.DB, j, rows, v.Upload.ID); err != nil {
		return err
	}
	return redirect(w, r, "/audiences/"+url.PathEscape(v.Audience.ID)+"/imports/"+url.PathEscape(j.ID))
}
