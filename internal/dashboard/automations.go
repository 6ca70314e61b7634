package dashboard

import (
	"net/http"
	"net/url"
	"strings"

	"mailroom/internal/apierr"
	"mailroom/internal/automations"
)

func (x *Dashboard) automations(w http.ResponseWriter, r *http.Request, s *session) error {
	as, err := x.d.Automations.List(r.Context(), s.key.WorkspaceID)
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "automations", as)
	return nil
}

type automationView struct {
	Automation automations.Automation
	Runs       []automations.Run
	// After a refused edit: the YAML as submitted, line by line with the
	// problems at their lines, and every problem.
	Draft    []yamlLine
	Problems []automations.Problem
	Source   string // the textarea's content
}

// yamlLine is one numbered line of a refused definition.
type yamlLine struct {
	N        int
	Text     string
	Problems []string
}

func (x *Dashboard) automation(w http.ResponseWriter, r *http.Request, s *session) error {
	return x.showAutomation(w, r, s, http.StatusOK, automationView{})
}

func (x *Dashboard) showAutomation(w http.ResponseWriter, r *http.Request, s *session, status int, v automationView) error {
	a, err := x.d.Automations.Get(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	runs, err := x.d.Automations.Runs(r.Context(), s.key.WorkspaceID, a.ID, "", nil, listRows)
	if err != nil {
		return err
	}
	v.Automation, v.Runs = a, runs
	if v.Source == "" {
		v.Source = a.YAML
	}
	x.render(w, r, s, status, "automation", v)
	return nil
}

// saveAutomation saves the edited YAML as a new version; a definition the
// service refuses comes back with its problems at their lines.
func (x *Dashboard) saveAutomation(w http.ResponseWriter, r *http.Request, s *session) error {
	src := r.PostForm.Get("yaml")
	_, err := x.d.Automations.Update(r.Context(), s.key.WorkspaceID, r.PathValue("id"), nil, []byte(src))
	if e, ok := apierr.As(err); ok && e.Code == "invalid_automation" {
		problems, _ := e.Extra["problems"].([]automations.Problem)
		v := automationView{Source: src, Problems: problems}
		at := map[int][]string{}
		for _, p := range problems {
			at[p.Line] = append(at[p.Line], p.String())
		}
		for i, line := range strings.Split(src, "\n") {
			v.Draft = append(v.Draft, yamlLine{N: i + 1, Text: line, Problems: at[i+1]})
		}
		return x.showAutomation(w, r, s, http.StatusBadRequest, v)
	}
	if err != nil {
		return err
	}
	return redirect(w, r, "/automations/"+url.PathEscape(r.PathValue("id"))+"?ok=saved")
}
