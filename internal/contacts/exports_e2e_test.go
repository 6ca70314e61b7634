package contacts_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"unicode/utf16"

	"mailroom/internal/testkit/testapp"
)

// importCSV posts a CSV file to the audience's import route.
func importCSV(t *testing.T, a *testapp.App, aud string, csv []byte) *testapp.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", a.URL+"/v1/audiences/"+aud+"/contacts", bytes.NewReader(csv))
	req.Header.Set("Authorization", "Bearer "+a.Key)
	req.Header.Set("Content-Type", "text/csv")
	resp, err := a.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return &testapp.Response{Status: resp.StatusCode, Header: resp.Header, Body: b.Bytes()}
}

// TestExportsImportAsExported: the CSV exports of Mailchimp, Brevo,
// MailerLite, Kit, Substack, Beehiiv and Resend import without a mapping:
// the address, first and last name (the contact's and merge fields), tags
// as the exporter wrote them, status words, and the other columns as
// attributes templates and segment rules can name.
func TestExportsImportAsExported(t *testing.T) {
	a := testapp.Start(t)
	exports := []struct {
		name, csv string
		tag       string // a tag the first row must carry ("" for none)
		attr      string // an attribute the first row must carry, name=value
		status    string // the second row's membership status
	}{
		{"mailchimp", "Email Address,First Name,Last Name,Address,Phone Number,Birthday,Company,MEMBER_RATING,OPTIN_TIME,OPTIN_IP,CONFIRM_TIME,CONFIRM_IP,LATITUDE,LONGITUDE,GMTOFF,DSTOFF,TIMEZONE,CC,REGION,LAST_CHANGED,LEID,EUID,NOTES,TAGS\r\n" +
			"ann@ex.example,Ann,Lee,,+1 555,03/14,Acme Inc,2,2024-01-02 10:00:00,,2024-01-02 10:01:00,,,,,,,US,,2024-05-01 09:00:00,12345,abc123,\"Likes \"\"tea\"\"\r\nand cake\",\"\"\"VIP\"\",\"\"Early bird\"\"\"\r\n" +
			"bob@ex.example,Bob,,,,,,,,,,,,,,,,,,,,,,\r\n", "Early bird", "Company=Acme Inc", "subscribed"},
		{"brevo", "EMAIL;FIRSTNAME;LASTNAME;SMS;COMPANY\nann@br.example;Ann;Lee;+33 6;Acme\nbob@br.example;Bob;;;\n", "", "COMPANY=Acme", "subscribed"},
		{"mailerlite", "Subscriber,name,last_name,groups,status,company\nann@ml.example,Ann,Lee,\"VIP, Early\",active,Acme\nbob@ml.example,Bob,,,unsubscribed,\n", "Early", "company=Acme", "unsubscribed"},
		{"kit", "email_address,first_name,tags,created_at\nann@kit.example,Ann,\"vip,early\",2024-01-01\nbob@kit.example,Bob,,2024-01-02\n", "early", "created_at=2024-01-01", "subscribed"},
		{"substack", "email,active_subscription,expiry,plan,email_disabled,created_at\nann@ss.example,true,,monthly,false,2024-01-01\nbob@ss.example,false,,,false,2024-02-01\n", "", "plan=monthly", "subscribed"},
		{"beehiiv", "email,status,created_at,utm_source\nann@bh.example,active,2024-01-01,twitter\nbob@bh.example,inactive,2024-02-01,\n", "", "utm_source=twitter", "unsubscribed"},
		{"resend", "id,email,first_name,last_name,unsubscribed,created_at\nc1,ann@rs.example,Ann,Lee,false,2024-01-01\nc2,bob@rs.example,Bob,,true,2024-01-02\n", "", "id=c1", "unsubscribed"},
		{"plain", "E-Mail Address,Vorname\nann@pl.example,Ann\nbob@pl.example,Bob\n", "", "", "subscribed"},
	}
	for _, ex := range exports {
		t.Run(ex.name, func(t *testing.T) {
			r := a.Do("POST", "/v1/audiences", map[string]any{"name": ex.name})
			aud := r.JSON()["id"].(string)
			r = importCSV(t, a, aud, []byte(ex.csv))
			if r.Status != 201 || r.JSON()["imported"] != float64(2) {
				t.Fatalf("import: %d %s", r.Status, r.Body)
			}
			var list struct {
				Contacts []struct {
					Email, Status string
					Attributes    map[string]string `json:"attributes"`
				}
			}
			r = a.Do("GET", "/v1/audiences/"+aud+"/contacts", nil)
			r.Decode(t, &list)
			if len(list.Contacts) != 2 {
				t.Fatalf("members %s", r.Body)
			}
			by := map[string]int{}
			for i, m := range list.Contacts {
				by[strings.SplitN(m.Email, "@", 2)[0]] = i
			}
			ann, bob := list.Contacts[by["ann"]], list.Contacts[by["bob"]]
			named := ex.name != "substack" && ex.name != "beehiiv" // exports with no name column
			if (named && ann.Attributes["first_name"] != "Ann") || bob.Status != ex.status {
				t.Fatalf("members %s", r.Body)
			}
			if ex.attr != "" {
				k, v, _ := strings.Cut(ex.attr, "=")
				if ann.Attributes[k] != v {
					t.Fatalf("attribute %s: %v", ex.attr, ann.Attributes)
				}
			}
			// The contact's own first name is filled.
			var contacts struct {
				Contacts []struct {
					Email     string
					FirstName string `json:"first_name"`
					Tags      []string
				}
			}
			a.Do("GET", "/v1/contacts?q=ann", nil).Decode(t, &contacts)
			found := false
			for _, c := range contacts.Contacts {
				if strings.HasPrefix(c.Email, "ann@") && strings.Contains(ex.csv, strings.SplitN(c.Email, "@", 2)[1]) {
					found = true
					if named && c.FirstName != "Ann" {
						t.Fatalf("contact %+v has no first name", c)
					}
					if ex.tag != "" && !contains(c.Tags, strings.ToLower(ex.tag)) { // tags are kept lowercase
						t.Fatalf("contact %+v lacks tag %q", c, ex.tag)
					}
				}
			}
			if !found {
				t.Fatalf("contact ann not found: %+v", contacts)
			}
			if !named {
				return
			}
			// Templates and segments name the fields.
			r = a.Do("POST", "/v1/broadcasts/preview", map[string]any{"subject": "Hi {{ first_name }}", "text": "x", "audienceId": aud})
			if r.Status != 200 || !strings.HasPrefix(r.JSON()["subject"].(string), "Hi ") || r.JSON()["subject"] == "Hi " {
				t.Fatalf("preview: %d %s", r.Status, r.Body)
			}
			r = a.Do("POST", "/v1/segments", map[string]any{"name": ex.name + " Anns", "audience_id": aud,
				"rules": []any{map[string]any{"field": "attributes.first_name", "op": "eq", "value": "Ann"}}})
			if r.Status != 201 || r.JSON()["member_count"] != float64(1) {
				t.Fatalf("segment: %d %s", r.Status, r.Body)
			}
		})
	}

	t.Run("bad files", func(t *testing.T) {
		aud := a.Do("POST", "/v1/audiences", map[string]any{"name": "bad"}).JSON()["id"].(string)
		utf16le := func(s string) []byte {
			b := []byte{0xff, 0xfe}
			for _, u := range utf16.Encode([]rune(s)) {
				b = append(b, byte(u), byte(u>>8))
			}
			return b
		}
		for _, c := range []struct {
			name string
			csv  []byte
			want string // in the message; "" means accepted
		}{
			{"two email columns", []byte("Email Address,email\na@x.example,b@x.example\n"), `2 email columns ("Email Address", "email")`},
			{"header only", []byte("Email Address,First Name\r\n"), "but no rows"},
			{"no email column", []byte("name,phone\nAnn,1\n"), `no email column: its header is "name", "phone"`},
			{"utf-16 without a mark", utf16le("email\na@x.example\n")[2:], "UTF-16 without a byte order mark"},
			{"unterminated quote", []byte("email,notes\na@x.example,\"open\n"), "line 2"},
			{"utf-16 with its mark", utf16le("Email Address,First Name\r\nzoe@x.example,Zoë\r\n"), ""},
		} {
			r := importCSV(t, a, aud, c.csv)
			if c.want == "" {
				if r.Status != 201 || r.JSON()["imported"] != float64(1) {
					t.Errorf("%s: %d %s", c.name, r.Status, r.Body)
				}
				continue
			}
			if msg, _ := r.JSON()["message"].(string); r.Status != 400 || !strings.Contains(msg, c.want) {
				t.Errorf("%s: %d %s (want %q)", c.name, r.Status, r.Body, c.want)
			}
		}
		var list struct{ Contacts []struct{ Email string } }
		a.Do("GET", "/v1/audiences/"+aud+"/contacts", nil).Decode(t, &list)
		if len(list.Contacts) != 1 || list.Contacts[0].Email != "zoe@x.example" {
			t.Errorf("a refused file wrote something: %+v", list.Contacts)
		}
	})
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
