package jobs

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// A marketing batch reads back as written, in its short one-workspace form
// or the long one, and a job queued in the long form before is read too.
func TestMarketingBatchArgsJSON(t *testing.T) {
	one := []EmailRef{{"em_1", "ws_1"}, {"em_2", "ws_1"}, {"em_3", "ws_1"}}
	mixed := []EmailRef{{"em_1", "ws_1"}, {"em_2", "ws_2"}}
	for name, refs := range map[string][]EmailRef{"one workspace": one, "mixed": mixed, "single": one[:1], "no workspace": {{"em_1", ""}}} {
		b, err := json.Marshal(MarketingBatchArgs{Emails: refs})
		if err != nil {
			t.Fatal(err)
		}
		var got MarketingBatchArgs
		if err := json.Unmarshal(b, &got); err != nil || !reflect.DeepEqual(got.Emails, refs) {
			t.Errorf("%s: stored %s, read %v (%v)", name, b, got.Emails, err)
		}
		if short := strings.Contains(string(b), `"email_ids"`); short != (name != "mixed" && name != "no workspace") {
			t.Errorf("%s: stored %s", name, b)
		}
	}
	var old MarketingBatchArgs
	if err := json.Unmarshal([]byte(`{"emails":[{"email_id":"em_1","workspace_id":"ws_1"},{"email_id":"em_2","workspace_id":"ws_2"}]}`), &old); err != nil ||
		!reflect.DeepEqual(old.Emails, mixed) {
		t.Errorf("a job of the long form read %v (%v)", old.Emails, err)
	}
	if b, _ := json.Marshal(MarketingBatchArgs{}); string(b) != `{"emails":[]}` {
		t.Errorf("an empty batch stored %s", b)
	}
}
