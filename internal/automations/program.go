package automations

import "fmt"

// program is a definition laid out flat for runs: the steps in the order
// the graph numbers them (a step, its then branch, its else branch, the
// steps after it), each with the index of what follows. A run keeps its
// position as an index into the program of its version.
type program struct {
	nodes []pnode
}

// end is the index after the last step: the run completes.
const end = -1

type pnode struct {
	ID   string
	Step Step
	Next int // ordinary steps; for an if, where both branches join
	Then int // if: first step of then (or the join when empty)
	Else int
}

// stepIDs names every step in graph order: the id written in the YAML, or
// s<n> from its position, skipping ids written elsewhere.
func (d Definition) stepIDs() []string {
	used := map[string]bool{"trigger": true}
	var mark func([]Step)
	mark = func(steps []Step) {
		for _, st := range steps {
			used[st.ID] = st.ID != ""
			if st.If != nil {
				mark(st.If.Then)
				mark(st.If.Else)
			}
		}
	}
	mark(d.Steps)
	var out []string
	n := 0
	var walk func([]Step)
	walk = func(steps []Step) {
		for _, st := range steps {
			n++
			id := st.ID
			for id == "" || (st.ID == "" && used[id]) {
				id = fmt.Sprintf("s%d", n) // an id: written as s<n> elsewhere keeps its name
				if used[id] {
					n++
					id = ""
				}
			}
			used[id] = true
			out = append(out, id)
			if st.If != nil {
				walk(st.If.Then)
				walk(st.If.Else)
			}
		}
	}
	walk(d.Steps)
	return out
}

// compile lays the definition out.
func (d Definition) compile() *program {
	ids := d.stepIDs()
	p := &program{}
	// lay appends steps and returns the index of the first (or next when
	// the list is empty); next is where the list continues when it ends.
	var lay func(steps []Step, next int) int
	lay = func(steps []Step, next int) int {
		if len(steps) == 0 {
			return next
		}
		idx := make([]int, len(steps))
		// Indices are assigned in graph order, so a step's branches sit
		// between it and the step after it: lay each step, then patch
		// the previous one's Next.
		for i, st := range steps {
			idx[i] = len(p.nodes)
			p.nodes = append(p.nodes, pnode{ID: ids[idx[i]], Step: st, Next: end, Then: end, Else: end})
			if st.If != nil {
				// Branches join the step after the if, whose index is not
				// known yet: lay them pointing at a placeholder.
				at := idx[i]
				then := lay(st.If.Then, -2-at) // lay grows p.nodes: assign after
				els := lay(st.If.Else, -2-at)
				p.nodes[at].Then, p.nodes[at].Else = then, els
			}
		}
		for i := range steps {
			n := next
			if i+1 < len(steps) {
				n = idx[i+1]
			}
			p.nodes[idx[i]].Next = n
		}
		return idx[0]
	}
	lay(d.Steps, end)
	// Resolve the placeholders: -2-at means "the Next of node at".
	var resolve func(i int) int
	resolve = func(i int) int {
		for i <= -2 {
			i = p.nodes[-2-i].Next
		}
		return i
	}
	for i := range p.nodes {
		p.nodes[i].Next = resolve(p.nodes[i].Next)
		p.nodes[i].Then = resolve(p.nodes[i].Then)
		p.nodes[i].Else = resolve(p.nodes[i].Else)
	}
	return p
}
