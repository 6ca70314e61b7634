package analytics

import (
	"errors"
	"testing"
	"time"

	"mailroom/internal/apierr"
)

// FuzzQuery: whatever the caller writes in the query string, resolve
// either accepts a window of 1 to 400 days with a known group_by and
// breakdown, or refuses with a 400; it never panics.
func FuzzQuery(f *testing.F) {
	for _, s := range [][7]string{
		{"", "", "", "", "", "", ""},
		{"2025-02-04", "2026-03-10", "month", "tag", "campaign", "", "campaign:spring"},
		{"2025-02-03", "2026-03-10", "day", "", "", "", ""},
		{"2026-02-30", "", "", "", "", "", ""},
		{"", "2026-03-01", "week", "domain", "", "marketing", "plan"},
		{"9999-12-31", "0000-01-01", "hour", "country", "x", "bulk", ":"},
		{"2026-03-10", "2026-03-10", "day", "tag", "a", "", "b:c"},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4], s[5], s[6])
	}
	today := Day(time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC))
	f.Fuzz(func(t *testing.T, from, to, groupBy, breakdown, tagKey, class, tag string) {
		q := Query{WorkspaceID: "ws", From: from, To: to, GroupBy: groupBy, Breakdown: breakdown, TagKey: tagKey, MailClass: class, Tag: tag}
		err := q.resolve(today)
		if err != nil {
			var ae *apierr.Error
			if !errors.As(err, &ae) || ae.Status != 400 {
				t.Fatalf("%+v: %v, want a 400", q, err)
			}
			return
		}
		if n := q.to - q.from + 1; n < 1 || n > MaxWindowDays {
			t.Fatalf("%+v: accepted a window of %d days", q, n)
		}
		if q.Breakdown == BreakdownTag && q.TagKey == "" || q.Breakdown != BreakdownTag && q.TagKey != "" {
			t.Fatalf("%+v: tag_key without breakdown=tag or the reverse", q)
		}
		if q.Tag != "" && (!q.hasTagFilt || q.filterKey == "") {
			t.Fatalf("%+v: a tag filter without a key", q)
		}
		if len(bucket(nil, q.from, q.to, q.GroupBy)) == 0 {
			t.Fatalf("%+v: no periods", q)
		}
	})
}
