package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"

	"mailroom/internal/apierr"
	"mailroom/internal/secretbox"
)

// Cursor is the position after which a list continues: the sort key and id
// of the last row returned. It travels signed (HMAC) and opaque, so a client
// cannot forge one, and a tampered cursor is refused with 422.
type Cursor struct {
	At int64  `json:"t"`
	ID string `json:"i"`
}

// Page is what a list handler needs from the query string.
type Page struct {
	Limit  int
	After  *Cursor // nil on the first page
	Offset int     // only on routes that keep offset
}

type pager struct{ box *secretbox.Box }

const cursorPurpose = "pagination-cursor"

// encode signs c into an opaque string.
func (p pager) encode(c Cursor) string {
	payload, _ := json.Marshal(c)
	mac := p.box.MAC(cursorPurpose, payload)
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(mac[:16])
}

func errBadCursor() error {
	return apierr.Invalid422("invalid_cursor", "The cursor is not one this API issued.").
		WithNext("Pass next_cursor from the previous page unchanged, or omit it to start over.")
}

// decode verifies and opens a cursor.
func (p pager) decode(s string) (*Cursor, error) {
	if len(s) > 512 {
		return nil, errBadCursor()
	}
	dot := bytes.IndexByte([]byte(s), '.')
	if dot < 0 {
		return nil, errBadCursor()
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(s[:dot])
	mac, err2 := base64.RawURLEncoding.DecodeString(s[dot+1:])
	if err1 != nil || err2 != nil || len(mac) != 16 {
		return nil, errBadCursor()
	}
	want := p.box.MAC(cursorPurpose, payload)
	if !hmacEqual(want[:16], mac) {
		return nil, errBadCursor()
	}
	var c Cursor
	if err := json.Unmarshal(payload, &c); err != nil || c.ID == "" {
		return nil, errBadCursor()
	}
	return &c, nil
}

func hmacEqual(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	var v byte
	for i := range a {
		v |= a[i] ^ b[i]
	}
	return v == 0
}

// maxOffset caps offset on the routes that keep it.
const maxOffset = 10000

// page reads limit and cursor (cursor, before or after) for a list route.
// withOffset enables the legacy offset parameter.
func (p pager) page(r *http.Request, def, max int, withOffset bool) (Page, error) {
	q := r.URL.Query()
	pg := Page{Limit: def}
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
		c, err := p.decode(cur)
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

// meta builds has_more/next_cursor from a list that was read with limit+1
// rows; it trims the extra row via the returned count.
func (p pager) meta(n, limit int, last func(i int) Cursor) (listMeta, int) {
	if n <= limit {
		return listMeta{}, n
	}
	c := p.encode(last(limit - 1))
	return listMeta{HasMore: true, NextCursor: &c}, limit
}

// deletedJSON is the answer of the deletes that name what they removed:
// { deleted: <id> }.
type deletedJSON struct {
	Deleted string `json:"deleted"`
}
