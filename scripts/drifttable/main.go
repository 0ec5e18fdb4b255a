// Command drifttable summarizes the replay reports written by
// scripts/drift.sh: for each group of streams (0, 1, 3, 7 shifts) the
// mistake rate of every learner averaged over the group's streams, as a
// Markdown table (learners by budget), and a plot of mistake rate against
// budget per group, like Figures 3 and 4 of Cavallanti, Cesa-Bianchi and
// Gentile (2007).
//
// Usage: go run ./scripts/drifttable DIR SET
package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/streamlearner/streamlearner/internal/replay"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: drifttable DIR SET")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "drifttable:", err)
		os.Exit(1)
	}
}

// cell accumulates one learner's results over a group's streams.
type cell struct {
	rate, recovered, shifts, recovery float64
	n                                 int
}

func run(dir, set string) error {
	groups := []int{0, 1, 3, 7}
	cells, budgets, err := load(dir, set, groups)
	if err != nil {
		return err
	}
	bs := sortedKeys(budgets)
	fams := make([]string, 0, len(cells))
	for f := range cells {
		fams = append(fams, f)
	}
	sort.Slice(fams, func(i, j int) bool {
		return order(fams[i]) < order(fams[j]) || order(fams[i]) == order(fams[j]) && fams[i] < fams[j]
	})
	for _, g := range groups {
		printRates(set, g, fams, bs, cells)
	}
	printRecovery(set, groups, fams, bs, cells)
	return plotBudgets(filepath.Join(dir, set+"-budgets.png"), set, groups, fams, bs, cells)
}

// table is the cells by family, budget (0 = none) and group.
type table = map[string]map[int]map[int]*cell

// load reads the reports of each group of set in dir into a table, and
// the budgets they use.
func load(dir, set string, groups []int) (table, map[int]bool, error) {
	cells := table{}
	budgets := map[int]bool{}
	for _, g := range groups {
		paths, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("%s-s%d-*.json", set, g)))
		if len(paths) == 0 {
			return nil, nil, fmt.Errorf("no reports for %s with %d shifts in %s", set, g, dir)
		}
		for _, p := range paths {
			if err := add(cells, budgets, p, g); err != nil {
				return nil, nil, err
			}
		}
	}
	return cells, budgets, nil
}

// add adds the report at path, of group g, to cells and its budgets to
// budgets.
func add(cells table, budgets map[int]bool, path string, g int) error {
	var rep replay.Report
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, l := range rep.Partitions[0].Learners {
		fam, budget := split(l.Spec)
		budgets[budget] = true
		if cells[fam] == nil {
			cells[fam] = map[int]map[int]*cell{}
		}
		if cells[fam][budget] == nil {
			cells[fam][budget] = map[int]*cell{}
		}
		c := cells[fam][budget][g]
		if c == nil {
			c = &cell{}
			cells[fam][budget][g] = c
		}
		c.rate += l.MistakeRate
		c.n++
		for _, r := range l.Recovery {
			c.shifts++
			if r.Records != nil {
				c.recovered++
				c.recovery += float64(*r.Records)
			}
		}
	}
	return nil
}

// printRates prints the table of group g's mistake rates.
func printRates(set string, g int, fams []string, bs []int, cells table) {
	fmt.Printf("\n%s, %d shifts: mistakes %% (mean of %d streams)\n", set, g, cells[fams[0]][firstKey(cells[fams[0]])][g].n)
	header(bs)
	for _, f := range fams {
		fmt.Printf("| %s |", f)
		for _, b := range bs {
			if c := cells[f][b][g]; c != nil {
				fmt.Printf(" %.2f |", 100*c.rate/float64(c.n))
			} else {
				fmt.Print(" |")
			}
		}
		fmt.Println()
	}
}

// printRecovery prints the table of the shifts recovered from, all groups
// together.
func printRecovery(set string, groups []int, fams []string, bs []int, cells table) {
	fmt.Printf("\n%s: shifts recovered from (mean records to recover), all groups\n", set)
	header(bs)
	for _, f := range fams {
		fmt.Printf("| %s |", f)
		for _, b := range bs {
			var rec, sh, sum float64
			for _, g := range groups {
				if c := cells[f][b][g]; c != nil {
					rec, sh, sum = rec+c.recovered, sh+c.shifts, sum+c.recovery
				}
			}
			switch {
			case sh == 0:
				fmt.Print(" |")
			case rec == 0:
				fmt.Printf(" 0/%.0f |", sh)
			default:
				fmt.Printf(" %.0f/%.0f (%.0f) |", rec, sh, sum/rec)
			}
		}
		fmt.Println()
	}
}

// header starts a Markdown table with a column per budget.
func header(bs []int) {
	fmt.Print("\n| learner |")
	for _, b := range bs {
		if b == 0 {
			fmt.Print(" no budget |")
		} else {
			fmt.Printf(" B=%d |", b)
		}
	}
	fmt.Print("\n|---|" + strings.Repeat("---|", len(bs)) + "\n")
}

// plotBudgets draws mistake rate against budget, a panel per group; the
// learners without a budget are horizontal lines.
func plotBudgets(path, set string, groups []int, fams []string, bs []int, cells map[string]map[int]map[int]*cell) error {
	plots := make([][]*plot.Plot, 2)
	for i := range plots {
		plots[i] = make([]*plot.Plot, 2)
	}
	var finite []int
	for _, b := range bs {
		if b > 0 {
			finite = append(finite, b)
		}
	}
	if len(finite) == 0 {
		return nil
	}
	for gi, g := range groups {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s, %d shifts", set, g)
		p.X.Label.Text = "budget"
		p.Y.Label.Text = "mistakes %"
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Legend.Top = true
		p.Legend.TextStyle.Font.Size = vg.Points(7)
		for fi, f := range fams {
			var xys plotter.XYs
			for _, b := range finite {
				if c := cells[f][b][g]; c != nil {
					xys = append(xys, plotter.XY{X: float64(b), Y: 100 * c.rate / float64(c.n)})
				}
			}
			if c := cells[f][0][g]; c != nil && len(xys) == 0 {
				y := 100 * c.rate / float64(c.n)
				xys = plotter.XYs{{X: float64(finite[0]), Y: y}, {X: float64(finite[len(finite)-1]), Y: y}}
			}
			if len(xys) == 0 {
				continue
			}
			line, points, err := plotter.NewLinePoints(xys)
			if err != nil {
				return err
			}
			line.Color, points.Color = plotutil.Color(fi), plotutil.Color(fi)
			points.Shape = plotutil.Shape(fi)
			if cells[f][0] != nil {
				line.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
			}
			p.Add(line, points)
			p.Legend.Add(f, line, points)
		}
		plots[gi/2][gi%2] = p
	}
	c, err := draw.NewFormattedCanvas(28*vg.Centimeter, 22*vg.Centimeter, "png")
	if err != nil {
		return err
	}
	t := draw.Tiles{Rows: 2, Cols: 2, PadX: 4 * vg.Millimeter, PadY: 4 * vg.Millimeter,
		PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 2 * vg.Millimeter}
	canvases := plot.Align(plots, t, draw.New(c))
	for r := range plots {
		for col := range plots[r] {
			plots[r][col].Draw(canvases[r][col])
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// split turns "rbp:budget=50" into ("rbp", 50) and "spa:lambda=0.1" into
// ("spa:lambda=0.1", 0): the family is the spec without its budget.
func split(spec string) (string, int) {
	name, params, _ := strings.Cut(spec, ":")
	var rest []string
	budget := 0
	for _, kv := range strings.Split(params, ",") {
		if v, ok := strings.CutPrefix(kv, "budget="); ok {
			budget, _ = strconv.Atoi(v)
			continue
		}
		if kv != "" {
			rest = append(rest, kv)
		}
	}
	if len(rest) > 0 {
		name += ":" + strings.Join(rest, ",")
	}
	return name, budget
}

// order lists the families as the paper does: first-order, then
// second-order.
func order(fam string) int {
	name, _, _ := strings.Cut(fam, ":")
	if i := slices.Index([]string{"perceptron", "spa", "rbp", "lbp", "forgetron", "sop", "rbsop", "lbsop"}, name); i >= 0 {
		return i
	}
	return math.MaxInt
}

func sortedKeys(m map[int]bool) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	return ks
}

func firstKey(m map[int]map[int]*cell) int {
	for k := range m {
		return k
	}
	return 0
}
