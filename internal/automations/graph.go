package automations

// Graph is the flow as nodes and edges, for GET /v1/automations/{id}.
type Graph struct {
	Nodes []Node `json:"nodes"`
	Edges []Edge `json:"edges"`
}

// Node is the trigger or one step.
type Node struct {
	ID   string `json:"id"`
	Type string `json:"type"`
}

// Edge leads from one node to the next; label is then or else out of an if.
type Edge struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Label string `json:"label,omitempty"`
}

type tail struct{ from, label string }

// Graph lays the definition out: the trigger node, then each step, an if
// leading to its then and else branches, which join the step after it.
// Steps without an id get one from their order (s1, s2, ...), skipping
// the ids written in the YAML (stepIDs; runs name their steps the same).
func (d Definition) Graph() Graph {
	g := Graph{Nodes: []Node{{ID: "trigger", Type: d.Trigger.Event}}, Edges: []Edge{}}
	ids := d.stepIDs()
	n := 0
	var lay func(steps []Step, in []tail) []tail
	lay = func(steps []Step, in []tail) []tail {
		for _, st := range steps {
			id := ids[n]
			n++
			g.Nodes = append(g.Nodes, Node{ID: id, Type: st.Type})
			for _, t := range in {
				g.Edges = append(g.Edges, Edge{From: t.from, To: id, Label: t.label})
			}
			switch {
			case st.Type == "exit":
				in = nil
			case st.If != nil:
				out := lay(st.If.Then, []tail{{id, "then"}})
				in = append(out, lay(st.If.Else, []tail{{id, "else"}})...)
			default:
				in = []tail{{from: id}}
			}
		}
		return in
	}
	lay(d.Steps, []tail{{from: "trigger"}})
	return g
}
