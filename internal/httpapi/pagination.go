package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"

	"mailroom/internal/apierr"
	"mailroom/internal/secretbox"
)

// Cursor is the position after which a list continues: the sort key and id
// of the last row returned. It travels signed (HMAC) and opaque, so a client
// cannot forge one, and a tampered cursor is refused with 422. The signature
// also covers the list's path, so a cursor from one list is refused on
// another (its position would mean nothing there).
type Cursor struct {
	At int64  `json:"t"`
	ID string `json:"i"`
}

// Page is what a list handler needs from the query string.
type Page struct {
	Limit  int
	After  *Cursor // nil on the first page
	Offset int     // only on routes that keep offset
	route  string  // the list's path, bound into the cursors it issues
}

type pager struct{ box *secretbox.Box }

const cursorPurpose = "pagination-cursor"

// encode signs c, for the list at route, into an opaque string. The route
// is signed but not carried, which keeps the cursor short.
func (p pager) encode(c Cursor, route string) string {
	payload, _ := json.Marshal(c)
	return p.box.Token(cursorPurpose, []byte(route+"\x00"), payload)
}

func errBadCursor() error {
	return apierr.Invalid422("invalid_cursor", "The cursor is not one this API issued.").
		WithNext("Pass next_cursor from the previous page unchanged, or omit it to start over.")
}

// decode verifies and opens a cursor issued for the list at route.
func (p pager) decode(s, route string) (*Cursor, error) {
	if len(s) > 512 {
		return nil, errBadCursor()
	}
	payload, ok := p.box.OpenToken(cursorPurpose, []byte(route+"\x00"), s)
	if !ok {
		return nil, errBadCursor()
	}
	var c Cursor
	if err := json.Unmarshal(payload, &c); err != nil || c.ID == "" {
		return nil, errBadCursor()
	}
	return &c, nil
}

// maxOffset caps offset on the routes that keep it.
const maxOffset = 10000

// page reads limit and cursor (cursor, before or after) for a list route.
// withOffset enables the legacy offset parameter.
func (p pager) page(r *http.Request, def, max int, withOffset bool) (Page, error) {
	q := r.URL.Query()
	pg := Page{Limit: def, route: r.URL.Path}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > max {
			return pg, apierr.New(http.StatusUnprocessableEntity, "invalid_limit", "limit must be an integer from 1 to %d.", max)
		}
		pg.Limit = n
	}
	var cur string
	for _, name := range []string{"cursor", "after", "before"} {
		if v := q.Get(name); v != "" {
			if cur != "" && cur != v {
				return pg, apierr.InvalidRequest("Pass one cursor (cursor, after or before), not several.")
			}
			cur = v
		}
	}
	if cur != "" {
		c, err := p.decode(cur, pg.route)
		if err != nil {
			return pg, err
		}
		pg.After = c
	}
	if v := q.Get("offset"); v != "" && withOffset {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return pg, apierr.New(http.StatusUnprocessableEntity, "invalid_offset", "offset must be a non-negative integer.")
		}
		if n > maxOffset {
			return pg, apierr.New(http.StatusUnprocessableEntity, "offset_too_large", "offset is capped at %d.", maxOffset).
				WithNext("Use cursor pagination (next_cursor) to read further.")
		}
		pg.Offset = n
	}
	return pg, nil
}

// listMeta is the has_more/next_cursor pair every list response carries;
// list answers embed it. The zero value is the last page.
type listMeta struct {
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

// meta builds has_more/next_cursor from a list that was read with
// pg.Limit+1 rows; it trims the extra row via the returned count.
func (p pager) meta(pg Page, n int, last func(i int) Cursor) (listMeta, int) {
	if n <= pg.Limit {
		return listMeta{}, n
	}
	c := p.encode(last(pg.Limit-1), pg.route)
	return listMeta{HasMore: true, NextCursor: &c}, pg.Limit
}

// whole checks the query of a list that answers its whole collection
// (has_more false, next_cursor null): it issues no cursor, so any passed is
// not one it issued and answers 422 as on the paged lists.
func (p pager) whole(r *http.Request) error {
	q := r.URL.Query()
	for _, name := range []string{"cursor", "after", "before"} {
		if q.Get(name) != "" {
			return errBadCursor()
		}
	}
	return nil
}

// ranked builds has_more for a ranked list read with limit+1 rows. It
// issues no cursor: a rank is no position to continue from, so a larger
// limit is the way to see more.
func ranked(n, limit int) (listMeta, int) {
	if n <= limit {
		return listMeta{}, n
	}
	return listMeta{HasMore: true}, limit
}

// deletedJSON is the answer of the deletes that name what they removed:
// { deleted: <id> }.
type deletedJSON struct {
	Deleted string `json:"deleted"`
}

// sdkList is what the Resend SDKs read on every list answer: object "list"
// and the rows as data[], beside the spec's own key (docs/resend.md).
type sdkList[T any] struct {
	Object string `json:"object"`
	Data   []T    `json:"data"`
}

func listOf[T any](rows []T) sdkList[T] {
	if rows == nil {
		rows = []T{}
	}
	return sdkList[T]{Object: "list", Data: rows}
}

// The spec's list answers, each with sdkList beside its own fields.

func (l audienceList) MarshalJSON() ([]byte, error) {
	type fields audienceList
	return json.Marshal(struct {
		fields
		sdkList[audienceJSON]
	}{fields(l), listOf(l.Audiences)})
}

func (l segmentMembers) MarshalJSON() ([]byte, error) {
	type fields segmentMembers
	return json.Marshal(struct {
		fields
		sdkList[segmentMemberJSON]
	}{fields(l), listOf(l.Members)})
}

func (l automationListJSON) MarshalJSON() ([]byte, error) {
	type fields automationListJSON
	return json.Marshal(struct {
		fields
		sdkList[automationJSON]
	}{fields(l), listOf(l.Automations)})
}

func (l broadcastList) MarshalJSON() ([]byte, error) {
	type fields broadcastList
	return json.Marshal(struct {
		fields
		sdkList[broadcastJSON]
	}{fields(l), listOf(l.Broadcasts)})
}

func (l contactList) MarshalJSON() ([]byte, error) {
	type fields contactList
	return json.Marshal(struct {
		fields
		sdkList[contactJSON]
	}{fields(l), listOf(l.Contacts)})
}

func (l segmentList) MarshalJSON() ([]byte, error) {
	type fields segmentList
	return json.Marshal(struct {
		fields
		sdkList[segmentJSON]
	}{fields(l), listOf(l.Segments)})
}

func (l suppressionList) MarshalJSON() ([]byte, error) {
	type fields suppressionList
	return json.Marshal(struct {
		fields
		sdkList[suppressionJSON]
	}{fields(l), listOf(l.Suppressions)})
}

func (l templateList) MarshalJSON() ([]byte, error) {
	type fields templateList
	return json.Marshal(struct {
		fields
		sdkList[templateJSON]
	}{fields(l), listOf(l.Templates)})
}

func (l topicList) MarshalJSON() ([]byte, error) {
	type fields topicList
	return json.Marshal(struct {
		fields
		sdkList[topicJSON]
	}{fields(l), listOf(l.Topics)})
}

func (l runListJSON) MarshalJSON() ([]byte, error) {
	type fields runListJSON
	return json.Marshal(struct {
		fields
		sdkList[runJSON]
	}{fields(l), listOf(l.Runs)})
}

// The lists that had data[] already get object "list" beside it.

type listObject struct {
	Object string `json:"object"`
}

func (l emailList) MarshalJSON() ([]byte, error) {
	type fields emailList
	return json.Marshal(struct {
		fields
		listObject
	}{fields(l), listObject{"list"}})
}

func (l apiKeyList) MarshalJSON() ([]byte, error) {
	type fields apiKeyList
	return json.Marshal(struct {
		fields
		listObject
	}{fields(l), listObject{"list"}})
}

func (l domainList) MarshalJSON() ([]byte, error) {
	type fields domainList
	return json.Marshal(struct {
		fields
		listObject
	}{fields(l), listObject{"list"}})
}

func (l webhookList) MarshalJSON() ([]byte, error) {
	type fields webhookList
	return json.Marshal(struct {
		fields
		listObject
	}{fields(l), listObject{"list"}})
}

func (l recipientList) MarshalJSON() ([]byte, error) {
	type fields recipientList
	return json.Marshal(struct {
		fields
		sdkList[recipientJSON]
	}{fields(l), listOf(l.Recipients)})
}

// copiedJSON answers a duplicate (the Resend SDKs' {object, id}), with the
// copy's name beside.
type copiedJSON struct {
	Object string `json:"object"`
	ID     string `json:"id"`
	Name   string `json:"name"`
}
