package contacts

import (
	"bytes"
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"mailroom/internal/apierr"
)

// Import limits (spec "Operation limits").
const (
	MaxImportBytes = 8 << 20
	MaxImportRows  = 10000
)

// ErrImportTooLarge is the answer to an import over MaxImportBytes (a
// body on the API, a file on the dashboard).
func ErrImportTooLarge() error {
	return apierr.TooLarge("import_too_large", "An import takes at most %d MB.", MaxImportBytes>>20).
		WithNext("Split the file and import the parts one after the other.")
}

// ImportMapping renames and drops columns (CSV) or keys (JSON): the query's
// mapping.email, mapping.status, mapping.tags, mapping.first_name,
// mapping.last_name, mapping.attr.<column> and mapping.ignore. Roles, the
// dashboard's choice per column, comes before every other rule.
type ImportMapping struct {
	Email  string
	Status string
	Tags   string
	Attr   map[string]string // column → merge attribute name
	Ignore map[string]bool
	Roles  map[string]string // column → one of ImportRoles
}

// ImportRoles are the roles a column can be given: what it fills, or
// "attribute" (a merge field under AttrNameOf) or "ignore".
var ImportRoles = []string{"email", "first_name", "last_name", "tags", "status", "subscribed", "unsubscribed", "attribute", "ignore"}

// ProposedRole is the role a column plays without a mapping, by its name
// (knownColumns): one of ImportRoles.
func ProposedRole(column string) string {
	switch r := knownRole(column); r {
	case "", "attributes": // a CSV column named attributes is a merge field like any other
		return "attribute"
	default:
		return r
	}
}

// check refuses a role that is not one of ImportRoles.
func (m ImportMapping) check() error {
	for col, r := range m.Roles {
		if !slices.Contains(ImportRoles, r) {
			return apierr.InvalidRequest("Column %q cannot be %q: a column is one of %s.", col, r, strings.Join(ImportRoles, ", "))
		}
	}
	return nil
}

// ImportRow is one row of an import as read, before it meets the database.
type ImportRow struct {
	Row        int // 1-based among the data rows (a CSV header is not counted)
	Email      string
	FirstName  string // from a first-name column; "" when none
	LastName   string
	Status     string // "" when the row names none
	Subscribed *bool
	Tags       []string
	Attributes map[string]string
	Err        string // why the row is refused, "" when it is not
}

func errTooManyRows() error {
	return apierr.TooLarge("too_many_contacts", "An import takes at most %d rows.", MaxImportRows).
		WithNext("Split the file and import the parts one after the other.")
}

// field is one named value of a row: a CSV cell (str) or a JSON value (raw).
type field struct {
	key string
	str *string
	raw json.RawMessage
}

// ParseCSV reads an RFC 4180 file (quoted fields, CRLF or LF, an optional
// UTF-8 BOM; semicolon-separated when the header has more semicolons than
// commas). The first record names the columns. A malformed file (ragged or
// unterminated rows, binary) is refused whole, naming the row.
func ParseCSV(data []byte, m ImportMapping) ([]ImportRow, error) {
	_, r, cols, err := openCSV(data)
	if err != nil {
		return nil, err
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	// The columns are checked before any row is read: a file without an
	// address, or with two, is refused whole.
	var emails []string
	for _, c := range cols {
		if m.role(c) == "email" {
			emails = append(emails, c)
		}
	}
	switch {
	case len(emails) == 0:
		return nil, apierr.InvalidRequest("The CSV file has no email column: its header is %s.", quoteList(cols)).
			WithNext("Name the address column email (or Email Address, E-Mail, ...; see docs/importing.md), or say which it is with mapping.email=<column>.")
	case len(emails) > 1:
		return nil, apierr.InvalidRequest("The CSV file has %d email columns (%s); nothing was imported.", len(emails), quoteList(emails)).
			WithNext("Say which to use with mapping.email=<column>; the other becomes an attribute.")
	}
	var rows []ImportRow
	for n := 1; ; n++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(err)
		}
		if len(rows) == MaxImportRows {
			return nil, errTooManyRows()
		}
		fields := make([]field, len(rec))
		for i, v := range rec {
			v := v
			fields[i] = field{key: cols[i], str: &v}
		}
		rows = append(rows, buildRow(n, fields, m))
	}
	if len(rows) == 0 {
		return nil, apierr.InvalidRequest("The CSV file has a header (%s) but no rows; nothing was imported.", quoteList(cols))
	}
	return rows, nil
}

// openCSV decodes a file to UTF-8 text (text, what ParseCSV reads again)
// and reads its header: the reader is at the first data row.
func openCSV(data []byte) (text []byte, r *csv.Reader, cols []string, err error) {
	data = fromUTF16(data)
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		msg := "The CSV file is not UTF-8 text (it holds invalid UTF-8 or NUL bytes)."
		if looksUTF16(data) {
			msg = "The CSV file looks like UTF-16 without a byte order mark."
		}
		return nil, nil, nil, apierr.InvalidRequest("%s", msg).WithNext("Save the file as CSV UTF-8 (or UTF-16 with its byte order mark).")
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil, nil, apierr.InvalidRequest("The CSV file is empty; its first line must name the columns.")
	}
	r = csv.NewReader(bytes.NewReader(data))
	r.Comma = detectComma(data)
	r.ReuseRecord = true
	header, err := r.Read()
	if err != nil {
		return nil, nil, nil, csvError(err)
	}
	cols = make([]string, len(header))
	seen := map[string]bool{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, nil, nil, apierr.InvalidRequest("Column %d of the CSV header has no name.", i+1)
		}
		if seen[strings.ToLower(h)] {
			return nil, nil, nil, apierr.InvalidRequest("The CSV header names column %q twice.", h)
		}
		seen[strings.ToLower(h)] = true
		cols[i] = h
	}
	return data, r, cols, nil
}

// CSVPreview is a file as the dashboard shows it before importing: its
// columns, the role each plays without a mapping, and its first rows.
type CSVPreview struct {
	Text     []byte // the file as UTF-8 without a BOM: what ParseCSV reads
	Columns  []string
	Proposed []string // per column: ProposedRole
	Rows     [][]string
	Total    int // data rows in the file
}

// PreviewCSV reads the whole file as ParseCSV does (the same refusals for
// a malformed file, a header without rows or too many rows), keeping the
// first n rows; it does not need an email column (the person picks one).
func PreviewCSV(data []byte, n int) (CSVPreview, error) {
	text, r, cols, err := openCSV(data)
	if err != nil {
		return CSVPreview{}, err
	}
	p := CSVPreview{Text: text, Columns: cols, Proposed: make([]string, len(cols))}
	for i, c := range cols {
		p.Proposed[i] = ProposedRole(c)
	}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return CSVPreview{}, csvError(err)
		}
		if p.Total == MaxImportRows {
			return CSVPreview{}, errTooManyRows()
		}
		p.Total++
		if len(p.Rows) < n {
			p.Rows = append(p.Rows, slices.Clone(rec))
		}
	}
	if p.Total == 0 {
		return CSVPreview{}, apierr.InvalidRequest("The CSV file has a header (%s) but no rows; nothing was imported.", quoteList(cols))
	}
	return p, nil
}

// column finds the header column that plays role ("email", "status",
// "tags"), honouring the mapping.
func (m ImportMapping) column(cols []string, role string) (string, bool) {
	for _, c := range cols {
		if m.role(c) == role {
			return c, true
		}
	}
	return "", false
}

// role is what a column or key is: "email", "first_name", "last_name",
// "status", "subscribed", "unsubscribed", "tags", "attributes", "ignore",
// or "" for a merge attribute. A column named for a role that the mapping
// gives another column is a merge attribute.
func (m ImportMapping) role(key string) string {
	if m.Ignore[key] {
		return "ignore"
	}
	if r, ok := m.Roles[key]; ok {
		if r == "attribute" {
			return ""
		}
		return r
	}
	for _, e := range m.explicit() {
		if e.col != "" && key == e.col {
			return e.role
		}
	}
	if _, ok := m.Attr[key]; ok {
		return ""
	}
	r := knownRole(key)
	if m.claimed(r) {
		return ""
	}
	return r
}

type explicitRole struct{ col, role string }

func (m ImportMapping) explicit() []explicitRole {
	return []explicitRole{{m.Email, "email"}, {m.Status, "status"}, {m.Tags, "tags"}}
}

// claimed says whether the mapping names a column for role.
func (m ImportMapping) claimed(role string) bool {
	if role == "" || role == "attributes" {
		return false
	}
	for _, e := range m.explicit() {
		if e.col != "" && e.role == role {
			return true
		}
	}
	for _, r := range m.Roles {
		if r == role {
			return true
		}
	}
	return false
}

// detectComma picks ';' when the first line has more semicolons than
// commas outside quotes (a spreadsheet in a locale with decimal commas).
func detectComma(data []byte) rune {
	line := data
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		line = data[:i]
	}
	commas, semis, quoted := 0, 0, false
	for _, b := range line {
		switch {
		case b == '"':
			quoted = !quoted
		case quoted:
		case b == ',':
			commas++
		case b == ';':
			semis++
		}
	}
	if semis > commas {
		return ';'
	}
	return ','
}

// fromUTF16 decodes a file that starts with a UTF-16 byte order mark
// (Excel's "Unicode text") to UTF-8; any other file is returned as it is.
func fromUTF16(data []byte) []byte {
	var order binary.ByteOrder
	switch {
	case bytes.HasPrefix(data, []byte{0xff, 0xfe}):
		order = binary.LittleEndian
	case bytes.HasPrefix(data, []byte{0xfe, 0xff}):
		order = binary.BigEndian
	default:
		return data
	}
	data = data[2:]
	units := make([]uint16, len(data)/2)
	for i := range units {
		units[i] = order.Uint16(data[2*i:])
	}
	return []byte(string(utf16.Decode(units)))
}

// looksUTF16 says whether every other byte of the start is NUL.
func looksUTF16(data []byte) bool {
	n, nul := min(len(data), 64), 0
	for i := 0; i < n; i++ {
		if data[i] == 0 {
			nul++
		}
	}
	return n >= 8 && nul*3 >= n
}

// quoteList is names quoted and joined with commas, the first 12.
func quoteList(names []string) string {
	q := make([]string, 0, len(names))
	for i, n := range names {
		if i == 12 {
			q = append(q, fmt.Sprintf("and %d more", len(names)-12))
			break
		}
		q = append(q, fmt.Sprintf("%q", n))
	}
	return strings.Join(q, ", ")
}

func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		what := pe.Err.Error()
		switch {
		case errors.Is(pe.Err, csv.ErrFieldCount):
			what = "has a different number of fields than the header"
		case errors.Is(pe.Err, csv.ErrQuote), errors.Is(pe.Err, csv.ErrBareQuote):
			what = "has a quote that does not open or close a field properly (an unterminated quoted field?)"
		}
		return apierr.InvalidRequest("CSV line %d %s; nothing was imported.", pe.StartLine, what).With("line", pe.StartLine)
	}
	return apierr.InvalidRequest("The CSV file could not be read: %v.", err)
}

// buildRow turns a row's named values into an ImportRow, recording the
// first problem in Err.
func buildRow(n int, fields []field, m ImportMapping) ImportRow {
	row := ImportRow{Row: n, Attributes: map[string]string{}}
	for _, f := range fields {
		if row.Err = row.set(m.role(f.key), f, m); row.Err != "" {
			return row
		}
	}
	row.Err = row.finishAttributes()
	return row
}

// set takes one value into the row as its role says; the answer is the
// problem with it, "" when none.
func (row *ImportRow) set(role string, f field, m ImportMapping) string {
	switch role {
	case "ignore":
	case "email", "status":
		s, ok := f.text()
		if !ok {
			return fmt.Sprintf("%s must be a string", f.key)
		}
		if role == "email" {
			row.Email = s
		} else if st := statusOf(s); st != "" {
			row.Status = st
		} else {
			row.Status = strings.ToLower(strings.TrimSpace(s))
		}
	case "first_name", "last_name":
		s, ok := f.text()
		if !ok {
			return fmt.Sprintf("%s must be a string", f.key)
		}
		s = strings.TrimSpace(s)
		if s == "" {
			return ""
		}
		if role == "first_name" {
			row.FirstName = s
		} else {
			row.LastName = s
		}
	case "subscribed", "unsubscribed":
		b, ok := f.boolean()
		if !ok {
			return fmt.Sprintf("%s must be true or false", f.key)
		}
		if b != nil && role == "unsubscribed" {
			v := !*b
			b = &v
		}
		row.Subscribed = b
	case "tags":
		tags, ok := f.list()
		if !ok {
			return "tags must be an array of strings or a comma-separated string"
		}
		row.Tags = append(row.Tags, tags...)
	case "attributes":
		if f.str != nil { // a CSV column named attributes or data is a merge field like any other
			row.Attributes[f.key] = *f.str
			return ""
		}
		var attrs map[string]string
		if err := json.Unmarshal(f.raw, &attrs); err != nil {
			return fmt.Sprintf("%s must be an object of strings", f.key)
		}
		maps.Copy(row.Attributes, attrs)
	default:
		s, ok := f.text()
		if !ok {
			return fmt.Sprintf("%s must be a string (other keys are merge attributes)", f.key)
		}
		if f.str != nil && s == "" {
			return "" // an empty cell sets nothing
		}
		name := AttrNameOf(f.key)
		if to := m.Attr[f.key]; to != "" {
			name = to
		}
		row.Attributes[name] = s
	}
	return ""
}

// finishAttributes adds the names to the row's attributes and checks them
// all; the answer is the first problem, "" when none.
func (row *ImportRow) finishAttributes() string {
	// The names are also merge fields of those names, as templates and
	// rules read them, over a column that other names the same.
	for name, v := range map[string]string{"first_name": row.FirstName, "last_name": row.LastName} {
		if v != "" {
			row.Attributes[name] = v
		}
	}
	if len(row.Attributes) > MaxAttrsPerCall {
		return fmt.Sprintf("a row carries at most %d attributes", MaxAttrsPerCall)
	}
	for k, v := range row.Attributes {
		if err := CheckAttrName(k); err != nil {
			return apiMessage(err)
		}
		if err := CheckAttrValue(k, v); err != nil {
			return apiMessage(err)
		}
	}
	return ""
}

func apiMessage(err error) string {
	if e, ok := apierr.As(err); ok {
		return e.Message
	}
	return err.Error()
}

func (f field) text() (string, bool) {
	if f.str != nil {
		return *f.str, true
	}
	var s string
	if err := json.Unmarshal(f.raw, &s); err != nil {
		return "", false
	}
	return s, true
}

func (f field) boolean() (*bool, bool) {
	if f.str != nil {
		switch strings.ToLower(strings.TrimSpace(*f.str)) {
		case "":
			return nil, true
		case "true", "yes", "1":
			b := true
			return &b, true
		case "false", "no", "0":
			b := false
			return &b, true
		}
		return nil, false
	}
	var b *bool
	if err := json.Unmarshal(f.raw, &b); err != nil {
		return nil, false
	}
	return b, true
}

func (f field) list() ([]string, bool) {
	if s, ok := f.text(); ok {
		return splitTags(s), true
	}
	var out []string
	if err := json.Unmarshal(f.raw, &out); err != nil {
		return nil, false
	}
	return out, true
}

// ParseJSON reads an import body: a bare array of rows, { contacts: [...] }
// or { data: [...] } (with an optional dry_run), or one row object. dryRun
// is nil when the body does not say.
func ParseJSON(data []byte, m ImportMapping) (rows []ImportRow, dryRun *bool, err error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || !utf8.Valid(data) || !json.Valid(data) {
		return nil, nil, apierr.New(apierr.StatusBadRequest, "invalid_json", "The request body is not valid JSON.")
	}
	var list []json.RawMessage
	switch data[0] {
	case '[':
		if err := json.Unmarshal(data, &list); err != nil {
			return nil, nil, apierr.InvalidRequest("The body must be an array of contact objects.")
		}
	case '{':
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(data, &obj); err != nil {
			return nil, nil, apierr.InvalidRequest("The body must be a JSON object or array.")
		}
		env := ""
		for _, k := range []string{"contacts", "data"} {
			if v, ok := obj[k]; ok && len(v) > 0 && v[0] == '[' {
				env = k
			}
		}
		if env == "" {
			list = []json.RawMessage{data}
			break
		}
		if err := json.Unmarshal(obj[env], &list); err != nil {
			return nil, nil, apierr.InvalidRequest("%s must be an array of contact objects.", env)
		}
		for k, v := range obj {
			switch k {
			case env:
			case "dry_run":
				if err := json.Unmarshal(v, &dryRun); err != nil {
					return nil, nil, apierr.InvalidRequest("dry_run must be a boolean.")
				}
			default:
				return nil, nil, apierr.InvalidRequest("Unknown field %q beside %s.", k, env)
			}
		}
	default:
		return nil, nil, apierr.InvalidRequest("The body must be an array of contacts, an object with contacts or data, or one contact.")
	}
	if len(list) > MaxImportRows {
		return nil, nil, errTooManyRows()
	}
	rows = make([]ImportRow, 0, len(list))
	for i, raw := range list {
		rows = append(rows, jsonRow(i+1, raw, m))
	}
	return rows, dryRun, nil
}

func jsonRow(n int, raw json.RawMessage, m ImportMapping) ImportRow {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return ImportRow{Row: n, Err: "a row must be a JSON object"}
	}
	var fields []field
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return ImportRow{Row: n, Err: "a row must be a JSON object"}
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return ImportRow{Row: n, Err: "a row must be a JSON object"}
		}
		fields = append(fields, field{key: kt.(string), raw: v})
	}
	return buildRow(n, fields, m)
}
