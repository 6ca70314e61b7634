package automations

import (
	"os"
	"strings"
	"testing"
)

// TestAutomationsDocParses: every YAML example in docs/automations.md is a
// definition the checker accepts, so the guide cannot teach a refused form.
func TestAutomationsDocParses(t *testing.T) {
	b, err := os.ReadFile("../../docs/automations.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(b), "```yaml\n")[1:]
	if len(blocks) < 2 {
		t.Fatalf("only %d YAML blocks", len(blocks))
	}
	for i, blk := range blocks {
		src, _, _ := strings.Cut(blk, "```")
		if _, probs := Parse([]byte(src)); len(probs) > 0 {
			t.Errorf("block %d is refused: %v", i+1, probs)
		}
	}
}
