package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"mailroom/internal/apierr"
	"mailroom/internal/secretbox"
)

func TestPanicBecomes500(t *testing.T) {
	h := &handler{metrics: newMetrics(prometheus.NewRegistry())}
	h.log = nil
	srv := httptest.NewServer(h.outer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { panic("boom") })))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/v1/emails")
	if err != nil {
		t.Fatalf("connection dropped: %v", err)
	}
	defer resp.Body.Close()
	b := new(strings.Builder)
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	b.Write(buf[:n])
	rid := resp.Header.Get("x-request-id")
	if resp.StatusCode != 500 || !strings.Contains(b.String(), `"internal_error"`) || rid == "" || !strings.Contains(b.String(), rid) {
		t.Fatalf("%d %s (rid %s)", resp.StatusCode, b.String(), rid)
	}
}

func testPager(t testing.TB) pager {
	box, err := secretbox.New("cursor-test-key")
	if err != nil {
		t.Fatal(err)
	}
	return pager{box: box}
}

func TestCursorRoundTripAndTamper(t *testing.T) {
	p := testPager(t)
	c := Cursor{At: 1795385280123, ID: "em_abc"}
	s := p.encode(c, "/v1/emails")
	got, err := p.decode(s, "/v1/emails")
	if err != nil || *got != c {
		t.Fatalf("round trip: %v %v", got, err)
	}
	for _, bad := range []string{"", "x", s + "a", "a" + s, strings.Replace(s, ".", "", 1), s[:len(s)-2] + "AA"} {
		if _, err := p.decode(bad, "/v1/emails"); err == nil {
			t.Errorf("accepted tampered cursor %q", bad)
		}
	}
	other, _ := secretbox.New("another-key")
	if _, err := (pager{box: other}).decode(s, "/v1/emails"); err == nil {
		t.Error("cursor from another key accepted")
	}
	for _, route := range []string{"/v1/suppressions", "/v1/webhooks/deliveries", "/v1/emails/", ""} {
		if _, err := p.decode(s, route); !apierr.Is(err, "invalid_cursor") {
			t.Errorf("cursor of /v1/emails on %q: %v", route, err)
		}
	}
}

func TestPageParams(t *testing.T) {
	p := testPager(t)
	good := p.encode(Cursor{At: 1, ID: "x"}, "/v1/x")
	cases := []struct {
		q      string
		limit  int
		status int
	}{
		{"", 25, 0}, {"limit=100", 100, 0}, {"limit=0", 0, 422}, {"limit=101", 0, 422}, {"limit=abc", 0, 422},
		{"cursor=" + good, 25, 0}, {"before=" + good, 25, 0}, {"after=" + good, 25, 0}, {"cursor=junk", 0, 422},
		{"offset=10000", 25, 0}, {"offset=10001", 0, 422},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/v1/x?"+c.q, nil)
		pg, err := p.page(r, 25, 100, true)
		if c.status == 0 && (err != nil || pg.Limit != c.limit) {
			t.Errorf("%s: %v %+v", c.q, err, pg)
		}
		if c.status != 0 {
			if e, ok := err.(interface{ Error() string }); !ok || e == nil {
				t.Errorf("%s: want error", c.q)
			}
		}
	}
}

func FuzzCursorDecode(f *testing.F) {
	p := testPager(f)
	f.Add(p.encode(Cursor{At: 5, ID: "em_1"}, "/v1/emails"))
	f.Add("e30.AAAAAAAAAAAAAAAAAAAAAA")
	f.Add("..")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := p.decode(s, "/v1/emails")
		if err == nil && c.ID == "" {
			t.Fatal("accepted cursor without id")
		}
	})
}

func FuzzDecodeJSON(f *testing.F) {
	f.Add([]byte(`{"name":"a","scopes":["mail:send"]}`))
	f.Add([]byte(`[]`))
	f.Add([]byte("{\"name\":\"\xff\"}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var v struct {
			Name   string   `json:"name"`
			Scopes []string `json:"scopes"`
		}
		err := decodeJSON(b, &v)
		if err != nil {
			if _, ok := apierr.As(err); !ok {
				t.Fatalf("decode error is not an API error: %v", err)
			}
		}
	})
}
