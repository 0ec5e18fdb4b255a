package main

import (
	"fmt"
	"io"
	"os"

	"github.com/streamlearner/streamlearner/synth"
)

type genCmd struct {
	Gauss        genGaussCmd        `cmd:"" help:"Two 2-D Gaussians with label noise (Projectron paper, Table 3)."`
	Checkerboard genCheckerboardCmd `cmd:"" help:"Uniform checkerboard with label noise (Tightest paper, NCheckerboard)."`
}

type genGaussCmd struct {
	N     int     `default:"10000" help:"Number of points."`
	Noise float64 `default:"0.1" help:"Probability of flipping each label."`
	Seed  uint64  `default:"1" help:"Random seed."`
	Out   string  `short:"o" placeholder:"FILE" help:"Output file (default: standard output)."`
}

func (c *genGaussCmd) Run(out io.Writer) error {
	pts, err := synth.Gauss(synth.GaussConfig{N: c.N, Noise: c.Noise, Seed: c.Seed})
	if err != nil {
		return err
	}
	return writePoints(out, c.Out, pts)
}

type genCheckerboardCmd struct {
	N        int     `default:"10000" help:"Number of points."`
	Cells    int     `default:"4" help:"Cells per side."`
	CellSize float64 `default:"1" help:"Side of a cell."`
	Noise    float64 `default:"0.15" help:"Fraction of labels switched (exactly round(noise·n) points); 0 for a noise-free test set."`
	Seed     uint64  `default:"1" help:"Random seed."`
	Out      string  `short:"o" placeholder:"FILE" help:"Output file (default: standard output)."`
}

func (c *genCheckerboardCmd) Run(out io.Writer) error {
	pts, err := synth.Checkerboard(synth.CheckerboardConfig{N: c.N, Cells: c.Cells, CellSize: c.CellSize, Noise: c.Noise, Seed: c.Seed})
	if err != nil {
		return err
	}
	return writePoints(out, c.Out, pts)
}

func writePoints(out io.Writer, path string, pts []synth.Point) error {
	if path == "" {
		return synth.WriteLIBSVM(out, pts)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	if err := synth.WriteLIBSVM(f, pts); err != nil {
		f.Close()
		return fmt.Errorf("gen: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	return nil
}
