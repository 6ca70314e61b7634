package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"mailroom/internal/apierr"
	"mailroom/internal/policy"
)

// Dedicated IPs (issue 26; CONTRACT-WAVE2 "Policy, quotas and dedicated
// IPs"; docs/decisions.md, "Dedicated IPs").

type takeIPRequest struct {
	IP *string `json:"ip"` // omitted: any free address of the inventory
}

// patchIPRequest: paused and daily_cap, nothing else (unknown fields 400).
// daily_cap stays raw to tell absent from null from a number.
type patchIPRequest struct {
	Paused   *bool           `json:"paused"`
	DailyCap json.RawMessage `json:"daily_cap"`
}

type warmupJSON struct {
	Allowance *int64 `json:"allowance"` // null once warmed up
	Day       int    `json:"day"`
}

// reverseDNSJSON is the spec's expected PTR, actual PTR and forward
// confirmation: actual is the first PTR name as answered (null with none),
// actual_all every one, since an IP with several is worth seeing whole.
type reverseDNSJSON struct {
	Actual           *string  `json:"actual"`
	ActualAll        []string `json:"actual_all"`
	Expected         string   `json:"expected"`
	ForwardConfirmed bool     `json:"forward_confirmed"`
}

type ipJSON struct {
	CreatedAt  string          `json:"created_at"`
	DailyCap   *int64          `json:"daily_cap"`
	ID         string          `json:"id"`
	IP         string          `json:"ip"`
	Paused     bool            `json:"paused"`
	ReverseDNS *reverseDNSJSON `json:"reverse_dns,omitempty"` // single read only
	SentToday  int64           `json:"sent_today"`
	Warmup     warmupJSON      `json:"warmup"`
}

type sharedPoolJSON struct {
	Default bool     `json:"default"`
	ID      string   `json:"id"`
	IPs     []string `json:"ips"`
}

type ipListJSON struct {
	DefaultRegion string           `json:"default_region"`
	IPs           []ipJSON         `json:"ips"`
	Residency     string           `json:"residency"`
	SharedPools   []sharedPoolJSON `json:"shared_pools"`
	listMeta
}

type ipDeletedJSON struct {
	Deleted bool   `json:"deleted"`
	ID      string `json:"id"`
}

func (h *handler) ipOut(ctx context.Context, x policy.IP) (ipJSON, error) {
	w := policy.WarmupOf(x, h.d.Clock.Now())
	sent, err := h.d.Services.Policy.IPSends(ctx, x.WorkspaceID, x.IP)
	return ipJSON{ID: x.ID, IP: x.IP, Paused: x.Paused, DailyCap: x.DailyCap, CreatedAt: ts(x.CreatedAt),
		Warmup: warmupJSON{Day: w.Day, Allowance: w.Allowance}, SentToday: sent}, err
}

func (h *handler) listIPs(w http.ResponseWriter, r *http.Request) error {
	if err := h.pager.whole(r); err != nil {
		return err
	}
	list, err := h.d.Services.Policy.ListIPs(r.Context(), apiKey(r).WorkspaceID)
	if err != nil {
		return err
	}
	out := ipListJSON{DefaultRegion: policy.DefaultRegion, Residency: policy.Residency, IPs: make([]ipJSON, 0, len(list)),
		SharedPools: []sharedPoolJSON{{ID: "shared", Default: true, IPs: h.d.Services.Policy.SharedPool()}}}
	for _, x := range list {
		o, err := h.ipOut(r.Context(), x)
		if err != nil {
			return err
		}
		out.IPs = append(out.IPs, o)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handler) takeIP(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(w, r, maxBody)
	if err != nil {
		return err
	}
	var req takeIPRequest
	if len(bytes.TrimSpace(body)) > 0 {
		if err := decodeJSON(body, &req); err != nil {
			return err
		}
	}
	want := ""
	if req.IP != nil {
		if want = strings.TrimSpace(*req.IP); want == "" {
			return apierr.InvalidRequest("ip must be an IP address of the inventory, or left out.")
		}
	}
	x, taken, err := h.d.Services.Policy.TakeIP(r.Context(), apiKey(r).WorkspaceID, want)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if !taken {
		status = http.StatusOK
	}
	o, err := h.ipOut(r.Context(), x)
	if err != nil {
		return err
	}
	writeJSON(w, status, o)
	return nil
}

func (h *handler) getIP(w http.ResponseWriter, r *http.Request) error {
	x, err := h.d.Services.Policy.GetIP(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	out, err := h.ipOut(r.Context(), x)
	if err != nil {
		return err
	}
	rd := h.d.Services.Policy.CheckReverseDNS(r.Context(), x.IP)
	out.ReverseDNS = &reverseDNSJSON{Expected: rd.Expected, ActualAll: rd.Actual, ForwardConfirmed: rd.ForwardConfirmed}
	if len(rd.Actual) > 0 {
		out.ReverseDNS.Actual = &rd.Actual[0]
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handler) patchIP(w http.ResponseWriter, r *http.Request) error {
	var req patchIPRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	var p policy.IPPatch
	p.Paused = req.Paused
	if req.DailyCap != nil {
		if bytes.Equal(bytes.TrimSpace(req.DailyCap), []byte("null")) {
			p.ClearCap = true
		} else {
			n, err := parseCap(req.DailyCap)
			if err != nil {
				return err
			}
			p.DailyCap = &n
		}
	}
	if p.Paused == nil && p.DailyCap == nil && !p.ClearCap {
		return apierr.InvalidRequest("Nothing to update: send paused, daily_cap, or both.")
	}
	x, err := h.d.Services.Policy.UpdateIP(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), p)
	if err != nil {
		return err
	}
	o, err := h.ipOut(r.Context(), x)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, o)
	return nil
}

// parseCap reads daily_cap: a whole number from 0 to policy.MaxDailyCap.
func parseCap(raw json.RawMessage) (int64, error) {
	bad := apierr.InvalidRequest("daily_cap must be a whole number from 0 to %d, or null.", policy.MaxDailyCap)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return 0, bad
	}
	num, ok := v.(json.Number)
	if !ok {
		return 0, bad
	}
	n, err := num.Int64()
	if err != nil || n < 0 || n > policy.MaxDailyCap {
		return 0, bad
	}
	return n, nil
}

func (h *handler) deleteIP(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := h.d.Services.Policy.ReleaseIP(r.Context(), apiKey(r).WorkspaceID, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ipDeletedJSON{ID: id, Deleted: true})
	return nil
}
