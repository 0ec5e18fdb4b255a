package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// fullTables reads the mistake tables of docs/drift/SET.md (drift.sh's
// output): shifts → learner (without ",max=0") → cells after the name.
func fullTables(t *testing.T, set string) map[int]map[string][]string {
	t.Helper()
	b, err := os.ReadFile("../../docs/drift/" + set + ".md")
	if err != nil {
		t.Fatal(err)
	}
	head := regexp.MustCompile(`^\w+, (\d) shifts`)
	tables := map[int]map[string][]string{}
	cur := -1
	for _, line := range strings.Split(string(b), "\n") {
		if m := head.FindStringSubmatch(line); m != nil {
			cur, _ = strconv.Atoi(m[1])
			tables[cur] = map[string][]string{}
			continue
		}
		if strings.Contains(line, "shifts recovered") {
			cur = -1
		}
		if cur < 0 || !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| learner") {
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		name := strings.NewReplacer(":max=0", "", ",max=0", "").Replace(cells[0])
		tables[cur][name] = cells[1:]
	}
	if len(tables) != 4 {
		t.Fatalf("%s: %d tables of mistakes, want 4 (0, 1, 3, 7 shifts)", set, len(tables))
	}
	return tables
}

// bestSPA is the lowest SPA rate of a table and its λ.
func bestSPA(t *testing.T, tab map[string][]string) (string, string) {
	best, lambda := "", ""
	for name, cells := range tab {
		if l, ok := strings.CutPrefix(name, "spa:lambda="); ok {
			v, err := strconv.ParseFloat(cells[0], 64)
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := strconv.ParseFloat(best, 64); best == "" || v < b {
				best, lambda = cells[0], l
			}
		}
	}
	return best, lambda
}

// TestDriftSummariesMatchTheFullTables: every row of docs/drift.md's
// summary tables is the one its full table (docs/drift/SET.md, which
// scripts/drift.sh writes) gives, so that refreshing the full tables
// cannot leave the summaries stale.
func TestDriftSummariesMatchTheFullTables(t *testing.T) {
	doc, err := os.ReadFile("../../docs/drift.md")
	if err != nil {
		t.Fatal(err)
	}
	budgets := func(cells []string, from, to int) string { return strings.Join(cells[from:to], " / ") }
	for _, set := range []string{"reuters", "usps", "pendigits", "letter"} {
		tabs := fullTables(t, set)
		for _, shifts := range []int{0, 1, 3, 7} {
			tab := tabs[shifts]
			for _, l := range []string{"perceptron", "sop:a=1", "rbp", "lbp", "forgetron", "rbsop:a=1", "lbsop:a=1"} {
				if len(tab[l]) != 8 {
					t.Fatalf("%s, %d shifts: %s has %d cells", set, shifts, l, len(tab[l]))
				}
			}
			spa, lambda := bestSPA(t, tab)
			var row string
			if set == "reuters" {
				// B = 50 to 500; LBP and the Forgetron in one column.
				if shifts == 0 {
					lambda = "λ " + lambda
				}
				row = fmt.Sprintf("| %d | %s | %s (%s) | %s | %s | %s | %s | %s |", shifts, tab["perceptron"][0], spa, lambda, tab["sop:a=1"][0],
					budgets(tab["rbp"], 2, 6), budgets(tab["lbp"], 2, 6), budgets(tab["rbsop:a=1"], 2, 6), budgets(tab["lbsop:a=1"], 2, 6))
			} else {
				row = fmt.Sprintf("| %d | %s | %s | %s | %s | %s | %s | %s | %s |", shifts, tab["perceptron"][0], spa, tab["sop:a=1"][0],
					budgets(tab["rbp"], 2, 5), budgets(tab["lbp"], 2, 5), budgets(tab["forgetron"], 2, 5), budgets(tab["rbsop:a=1"], 2, 5), budgets(tab["lbsop:a=1"], 2, 5))
			}
			if !strings.Contains(string(doc), row+"\n") {
				t.Errorf("docs/drift.md lacks the %s row of %d shifts that docs/drift/%s.md gives:\n%s", set, shifts, set, row)
			}
		}
	}
}
