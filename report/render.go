package report

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// DefaultColumns is the plot width in pixels: one downsampled column each.
const DefaultColumns = 1200

// Options are what the page says about how it was made.
type Options struct {
	// Columns is the plot width in pixels (0: DefaultColumns).
	Columns int
	Title   string // shown as the page title, e.g. the input file name
	// Config is the resolved configuration, shown as given; Inputs names
	// what was read (files, options).
	Config []Field
	Inputs []Field
}

//go:embed assets/report.js
var script string

//go:embed assets/report.css
var style string

//go:embed assets/page.html
var pageHTML string

var pageTemplate = template.Must(template.New("page").Parse(pageHTML))

// Render writes the page of a job and its results. Every result is drawn
// on its rank's lane (a rank with results but no events gets an empty lane),
// at least one pixel wide.
func Render(w io.Writer, job *Job, results []Result, opts Options) error {
	v, err := buildPage(job, results, opts)
	if err != nil {
		return err
	}
	return pageTemplate.Execute(w, v)
}

type page struct {
	Title        string
	Summary      []Field
	Config       []Field
	Inputs       []Field
	Classes      []classRow
	Width        int
	SpanSeconds  string
	Scale        string
	Lanes        []laneView
	HeatPNG      template.URL
	HeatRows     int
	HeatHeight   int
	Episodes     []episodeMark
	EpisodeRows  []episodeRow
	EpisodesMore int
	MarkerLegend []legendItem
	PhaseLegend  []legendItem
	// AccountingLegend names the communicators whose accounting is drawn.
	AccountingLegend []legendItem
	// LedgerLegend names the ledger's communicator bands; HasLedger says
	// the lanes draw the ledger and LedgerRows are its table.
	LedgerLegend []legendItem
	HasLedger    bool
	LedgerRows   []ledgerRow
	// StartNs is the job's first event time, from which the hover gives
	// times (a decimal string: it is beyond a JavaScript number's exact
	// integers).
	StartNs string
	// CompactLanes puts a lane's label on one line (lanes too low for two).
	CompactLanes bool
	Data         resultsData
	Script       template.JS
	Style        template.CSS
}

type laneView struct {
	Rank    int64
	Host    string
	Height  int
	Area    string
	Band    string
	Results []resultGroup
	Markers []pathView
	Phases  []pathView
	// Accounting is NCCL's accounting of each of the rank's communicators,
	// drawn on the lane's y scale.
	Accounting []pathView
	// Ledger is the rank's hidden-memory ledger as stacked bands.
	Ledger []pathView
	// YTop and YBottom are the y axis: the values of the plot's top and
	// bottom lines, at the pixel rows TopY and BottomY.
	YTop, YBottom string
	TopY, BottomY int
	Badge         int
	BadgeCSS      string
	Peak          string
	NoSamples     bool
}

// resultGroup is a lane's results of one classification: one SVG group
// of one rectangle per result, so that a rectangle needs no class.
type resultGroup struct {
	Class string
	Marks []resultMark
}

type resultMark struct {
	X, W, I int
}

type pathView struct {
	D, Class, Tip string
}

type classRow struct {
	Name, Class              string
	Results, Ranks, Episodes int
}

type legendItem struct {
	Name, Class string
}

type episodeMark struct {
	X, W, I, X0, X1 int
	Class, Tip      string
}

type episodeRow struct {
	N                 int
	Start, Duration   string
	Ranks             string
	NRanks, NResults  int
	Strongest, Class  string
	Collectives, Peak string
	X0, X1            int
}

// resultsData is every result's fields for the hover, by column: Keys in
// order of first appearance, per key its distinct values, and per key and
// result the index of the result's value (-1: the result has no such key).
// Results share most values (classification, reason codes, world size), so
// this is a fraction of the size of one object per result, and the browser
// parses a few integer arrays instead of an object per result.
type resultsData struct {
	Keys   []string   `json:"keys"`
	Values [][]string `json:"values"`
	Index  [][]int32  `json:"index"`
}

const (
	episodeRowsShown  = 500
	maxLabelsShown    = 4
	markerPalette     = 8
	accountingPalette = 4
	phasePalette      = 8
)

func buildPage(job *Job, results []Result, opts Options) (*page, error) {
	cols := opts.Columns
	if cols <= 0 {
		cols = DefaultColumns
	}
	scale := TimeScale{StartNs: job.StartNs, EndNs: job.EndNs, Columns: cols}
	lanes := lanesWithResults(job.Lanes, results)
	eps := Episodes(results)

	p := &page{
		Title:       opts.Title,
		Config:      opts.Config,
		Inputs:      opts.Inputs,
		Width:       cols,
		SpanSeconds: strconv.FormatFloat(float64(job.EndNs-job.StartNs)/1e9, 'f', -1, 64),
		Script:      template.JS(script),
		Style:       template.CSS(style),
	}
	p.Data = resultsTable(results)
	p.Classes = classRows(results, eps)
	p.Summary = summary(job, lanes, results, eps)

	p.StartNs = strconv.FormatInt(job.StartNs, 10)
	lo, hi := hiddenRange(lanes)
	p.Scale = fmtBytes(lo) + " – " + fmtBytes(hi)
	acctClass := map[string]string{}
	phaseRows := 0
	if job.PhasesKnown {
		for i := range lanes {
			for _, s := range lanes[i].Phases {
				phaseRows = max(phaseRows, min(len(s.Path), 3))
			}
		}
	}
	g := newLaneGeometry(len(lanes), phaseRows, lo, hi)
	p.CompactLanes = g.Height < 36

	opClass := map[string]string{}
	for _, l := range job.MarkerLabels {
		if _, ok := opClass[l.Op]; !ok {
			c := "m" + strconv.Itoa(len(opClass)%markerPalette)
			opClass[l.Op] = c
			p.MarkerLegend = append(p.MarkerLegend, legendItem{Name: l.Op, Class: c})
		}
	}
	phaseClass := map[string]string{}

	byRank := map[int64][]int{}
	for i := range results {
		byRank[results[i].Rank] = append(byRank[results[i].Rank], i)
	}
	heat := image.NewNRGBA(image.Rect(0, 0, cols, max(len(lanes), 1)))
	p.Lanes = make([]laneView, len(lanes))
	for li := range lanes {
		l := &lanes[li]
		lv := &p.Lanes[li]
		lv.Rank, lv.Host, lv.Height = l.Rank, l.Host, g.Height
		lv.NoSamples = len(l.TimesNs) == 0

		columns := Downsample(l.TimesNs, l.HiddenBytes, scale)
		holdGaps(columns, maxGapColumns(l.TimesNs, scale))
		area, band := memoryPaths(columns, g)
		lv.Area, lv.Band = string(area), string(band)
		if len(l.HiddenBytes) > 0 {
			lv.Peak = fmtBytes(slices.Max(l.HiddenBytes))
		}
		heatRow(heat, li, columns, lo, hi)

		strongest := ""
		for n, ri := range byRank[l.Rank] {
			r := &results[ri]
			x0, x1 := pixelRange(scale, r.StartNs, r.EndNs)
			css := classCSS(r.Classification)
			gi := slices.IndexFunc(lv.Results, func(g resultGroup) bool { return g.Class == css })
			if gi < 0 {
				gi = len(lv.Results)
				lv.Results = append(lv.Results, resultGroup{Class: css})
			}
			lv.Results[gi].Marks = append(lv.Results[gi].Marks, resultMark{X: x0, W: x1 - x0, I: ri})
			if n == 0 || classRank(r.Classification) > classRank(strongest) {
				strongest = r.Classification
			}
		}
		lv.Badge, lv.BadgeCSS = len(byRank[l.Rank]), classCSS(strongest)
		lv.Markers = markerPaths(l.Markers, job.MarkerLabels, opClass, scale, g)
		lv.Accounting = accountingPaths(l.Accounting, acctClass, &p.AccountingLegend, scale, g)
		if ll := job.Ledgers[l.Rank]; ll != nil {
			lv.Ledger = ledgerPaths(ll, acctClass, &p.LedgerLegend, g)
		}
		lv.YTop, lv.YBottom, lv.TopY, lv.BottomY = fmtBytes(g.Hi), fmtBytes(g.Lo), g.Top, g.Bottom
		lv.Phases = phasePaths(l.Phases, phaseClass, &p.PhaseLegend, scale, g)
	}
	var err error
	p.HeatPNG, err = pngDataURL(heat)
	if err != nil {
		return nil, err
	}
	p.HeatRows = max(len(lanes), 1)
	p.HeatHeight = min(max(len(lanes)*8, 48), 320)

	for i := range eps {
		e := &eps[i]
		x0, x1 := pixelRange(scale, e.StartNs, e.EndNs)
		row := episodeRow{
			N:         i + 1,
			Start:     strconv.FormatFloat(float64(e.StartNs-job.StartNs)/1e9, 'f', 2, 64),
			Duration:  strconv.FormatFloat(float64(e.EndNs-e.StartNs)/1e6, 'f', 0, 64),
			Ranks:     compactRanks(e.Ranks, 80),
			NRanks:    len(e.Ranks),
			NResults:  len(e.Results),
			Strongest: e.Strongest,
			Class:     classCSS(e.Strongest),
			X0:        x0, X1: x1,
		}
		row.Collectives = episodeCollectives(e, results, lanes, job.MarkerLabels)
		var peak int64
		for _, ri := range e.Results {
			peak = max(peak, results[ri].PeakGapBytes)
		}
		if peak > 0 {
			row.Peak = fmtBytes(peak)
		}
		tip := fmt.Sprintf("episode %d · %s s · %s ms · %d ranks (%s) · %d results · strongest %s",
			row.N, row.Start, row.Duration, row.NRanks, row.Ranks, row.NResults, row.Strongest)
		if row.Collectives != "" {
			tip += " · " + row.Collectives
		}
		p.Episodes = append(p.Episodes, episodeMark{X: x0, W: x1 - x0, I: i, X0: x0, X1: x1, Class: row.Class, Tip: tip})
		if len(p.EpisodeRows) < episodeRowsShown {
			p.EpisodeRows = append(p.EpisodeRows, row)
		}
	}
	p.EpisodesMore = len(eps) - len(p.EpisodeRows)
	p.LedgerRows = ledgerRows(lanes, job.Ledgers)
	p.HasLedger = len(p.LedgerRows) > 0
	return p, nil
}

// lanesWithResults adds an empty lane for each rank that has results but
// no events, so that no result is left out.
func lanesWithResults(lanes []Lane, results []Result) []Lane {
	have := make(map[int64]bool, len(lanes))
	for i := range lanes {
		have[lanes[i].Rank] = true
	}
	out := lanes
	for i := range results {
		if r := results[i].Rank; !have[r] {
			have[r] = true
			if len(out) == len(lanes) {
				out = slices.Clone(lanes)
			}
			out = append(out, Lane{Rank: r})
		}
	}
	if len(out) != len(lanes) {
		slices.SortFunc(out, func(a, b Lane) int { return cmp.Compare(a.Rank, b.Rank) })
	}
	return out
}

// pixelRange is an interval's columns [x0, x1), at least one column wide
// and inside the plot.
func pixelRange(s TimeScale, startNs, endNs int64) (int, int) {
	x0 := int(math.Floor(s.X(startNs)))
	x1 := int(math.Ceil(s.X(max(endNs, startNs))))
	x0 = min(x0, s.Columns-1)
	return x0, max(x1, x0+1)
}

// maxGapColumns is how many columns apart two samples may lie and still be
// joined: five times the lane's median sampling interval.
func maxGapColumns(times []int64, s TimeScale) int {
	if len(times) < 2 {
		return 1
	}
	d := make([]int64, 0, len(times)-1)
	for i := 1; i < len(times); i++ {
		d = append(d, times[i]-times[i-1])
	}
	slices.Sort(d)
	med := d[len(d)/2]
	span := s.EndNs - s.StartNs
	if span <= 0 {
		return 1
	}
	return int(math.Ceil(5*float64(med)/float64(span)*float64(s.Columns))) + 1
}

// hiddenRange is the shared y scale of the lanes: hidden memory and NCCL's
// accounting, which is part of it.
func hiddenRange(lanes []Lane) (lo, hi int64) {
	lo, hi = math.MaxInt64, 0
	for i := range lanes {
		for _, v := range lanes[i].HiddenBytes {
			lo, hi = min(lo, v), max(hi, v)
		}
		for _, a := range lanes[i].Accounting {
			for _, v := range a.Bytes {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if lo > hi {
		return 0, 1
	}
	return lo, hi
}

func markerPaths(markers []Marker, labels []MarkerLabel, opClass map[string]string, s TimeScale, g laneGeometry) []pathView {
	if len(markers) == 0 {
		return nil
	}
	// An op's end is a shorter tick of the op's colour: it is no op.
	type key struct {
		label int32
		end   bool
	}
	byLabel := map[key][]int{}
	for _, m := range markers {
		k := key{m.Label, m.End}
		byLabel[k] = append(byLabel[k], s.Column(m.TimeNs))
	}
	keys := make([]key, 0, len(byLabel))
	for k := range byLabel {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.label != b.label {
			return cmp.Compare(a.label, b.label)
		}
		if a.end == b.end {
			return 0
		}
		if a.end {
			return 1
		}
		return -1
	})
	out := make([]pathView, 0, len(keys))
	for _, k := range keys {
		l := labels[k.label]
		v := pathView{
			D:     string(tickPath(byLabel[k], g.Bottom+1, markerHeight)),
			Class: opClass[l.Op],
			Tip:   "collective: " + l.String(),
		}
		if k.end {
			v.D = string(tickPath(byLabel[k], g.Bottom+1+markerHeight/2, markerHeight-markerHeight/2))
			v.Class += " end"
			v.Tip = "end of collective: " + l.String()
		}
		out = append(out, v)
	}
	return out
}

// accountingPaths draws each communicator's accounting as a line through
// the greatest value of each pixel column, held between reports.
func accountingPaths(series []AccountingSeries, class map[string]string, legend *[]legendItem, s TimeScale, g laneGeometry) []pathView {
	out := make([]pathView, 0, len(series))
	for _, a := range series {
		cols := Downsample(a.TimesNs, a.Bytes, s)
		holdGaps(cols, maxGapColumns(a.TimesNs, s))
		var d []byte
		for x := 0; x < len(cols); {
			if cols[x].N == 0 {
				x++
				continue
			}
			y := x
			for y < len(cols) && cols[y].N != 0 {
				y++
			}
			d = stepPath(d, cols, x, y, func(c Column) int { return g.y(c.Max) })
			x = y
		}
		c, ok := class[a.Comm]
		if !ok {
			c = "a" + strconv.Itoa(len(class)%accountingPalette)
			class[a.Comm] = c
			*legend = append(*legend, legendItem{Name: "NCCL accounting, comm " + a.Comm, Class: c})
		}
		out = append(out, pathView{D: string(d), Class: "acct " + c,
			Tip: "NCCL accounting · comm " + a.Comm + " · peak " + fmtBytes(slices.Max(a.Bytes))})
	}
	return out
}

func phasePaths(spans []PhaseSpan, phaseClass map[string]string, legend *[]legendItem, s TimeScale, g laneGeometry) []pathView {
	if len(spans) == 0 || g.PhaseRows == 0 {
		return nil
	}
	type key struct {
		row  int
		path string
		open bool
	}
	groups := map[key][][2]int{}
	var order []key
	for _, sp := range spans {
		if len(sp.Path) == 0 {
			continue
		}
		k := key{row: min(len(sp.Path), g.PhaseRows) - 1, path: strings.Join(sp.Path, " / "), open: sp.SyntheticEnd}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		x0, x1 := pixelRange(s, sp.StartNs, sp.EndNs)
		groups[k] = append(groups[k], [2]int{x0, x1})
		leaf := sp.Path[len(sp.Path)-1]
		if _, ok := phaseClass[leaf]; !ok {
			c := "p" + strconv.Itoa(len(phaseClass)%phasePalette)
			phaseClass[leaf] = c
			*legend = append(*legend, legendItem{Name: leaf, Class: c})
		}
	}
	out := make([]pathView, 0, len(order))
	for _, k := range order {
		parts := strings.Split(k.path, " / ")
		tip := "phase: " + k.path
		if k.open {
			tip += " (never exited: ends at the rank's last event)"
		}
		out = append(out, pathView{
			D:     string(spanPath(groups[k], 1+k.row*phaseRowHeight, phaseRowHeight-1)),
			Class: phaseClass[parts[len(parts)-1]],
			Tip:   tip,
		})
	}
	return out
}

// episodeCollectives names the collectives of an episode: the results' own
// (evidence mode) when they have one, else the markers its ranks recorded
// during it.
func episodeCollectives(e *Episode, results []Result, lanes []Lane, labels []MarkerLabel) string {
	var names []string
	add := func(s string) {
		if s != "" && !slices.Contains(names, s) {
			names = append(names, s)
		}
	}
	for _, ri := range e.Results {
		if r := &results[ri]; r.Op != "" {
			add(MarkerLabel{Op: r.Op, Comm: r.Comm}.String())
		}
	}
	if len(names) == 0 {
		for _, rank := range e.Ranks {
			i, ok := slices.BinarySearchFunc(lanes, rank, func(l Lane, r int64) int { return cmp.Compare(l.Rank, r) })
			if !ok {
				continue
			}
			ms := lanes[i].Markers
			j, _ := slices.BinarySearchFunc(ms, e.StartNs, func(m Marker, t int64) int { return cmp.Compare(m.TimeNs, t) })
			for ; j < len(ms) && ms[j].TimeNs <= e.EndNs; j++ {
				add(labels[ms[j].Label].String())
			}
			if len(names) > maxLabelsShown {
				break
			}
		}
	}
	if len(names) > maxLabelsShown {
		names = append(names[:maxLabelsShown], "…")
	}
	return strings.Join(names, ", ")
}

func resultsTable(results []Result) resultsData {
	d := resultsData{Keys: []string{}, Values: [][]string{}, Index: [][]int32{}}
	keyIndex := map[string]int{}
	var valueIndex []map[string]int32
	for i := range results {
		for _, f := range results[i].Fields {
			k, ok := keyIndex[f.Key]
			if !ok {
				k = len(d.Keys)
				keyIndex[f.Key] = k
				d.Keys = append(d.Keys, f.Key)
				d.Values = append(d.Values, nil)
				col := make([]int32, len(results))
				for j := range col {
					col[j] = -1
				}
				d.Index = append(d.Index, col)
				valueIndex = append(valueIndex, map[string]int32{})
			}
			v, ok := valueIndex[k][f.Value]
			if !ok {
				v = int32(len(d.Values[k]))
				valueIndex[k][f.Value] = v
				d.Values[k] = append(d.Values[k], f.Value)
			}
			d.Index[k][i] = v
		}
	}
	return d
}

func classRows(results []Result, eps []Episode) []classRow {
	rows := map[string]*classRow{}
	ranks := map[string]map[int64]bool{}
	get := func(c string) *classRow {
		r := rows[c]
		if r == nil {
			r = &classRow{Name: c, Class: classCSS(c)}
			rows[c] = r
			ranks[c] = map[int64]bool{}
		}
		return r
	}
	for _, c := range knownClasses {
		get(c)
	}
	for i := range results {
		r := get(results[i].Classification)
		r.Results++
		ranks[results[i].Classification][results[i].Rank] = true
	}
	for i := range eps {
		get(eps[i].Strongest).Episodes++
	}
	out := make([]classRow, 0, len(rows))
	for c, r := range rows {
		r.Ranks = len(ranks[c])
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b classRow) int {
		return cmp.Or(cmp.Compare(classRank(b.Name), classRank(a.Name)), strings.Compare(a.Name, b.Name))
	})
	return out
}

func summary(job *Job, lanes []Lane, results []Result, eps []Episode) []Field {
	var samples, markers int
	for i := range lanes {
		samples += len(lanes[i].TimesNs)
		markers += len(lanes[i].Markers)
	}
	jobs := strings.Join(job.JobIDs, ", ")
	if jobs == "" {
		jobs = "(none)"
	}
	return []Field{
		{"job", jobs},
		{"ranks", fmt.Sprintf("%d lanes, world size %d", len(lanes), job.WorldSize)},
		{"duration", strconv.FormatFloat(float64(job.EndNs-job.StartNs)/1e9, 'f', 2, 64) + " s"},
		{"events", fmt.Sprintf("%d (%d samples, %d collective markers)", job.Events, samples, markers)},
		{"results", strconv.Itoa(len(results))},
		{"synchronous episodes", strconv.Itoa(len(eps))},
	}
}

// viridis anchors, low to high.
var heatAnchors = []color.NRGBA{
	{0x44, 0x01, 0x54, 0xff}, {0x48, 0x28, 0x78, 0xff}, {0x3e, 0x4a, 0x89, 0xff},
	{0x31, 0x68, 0x8e, 0xff}, {0x26, 0x82, 0x8e, 0xff}, {0x1f, 0x9e, 0x89, 0xff},
	{0x35, 0xb7, 0x79, 0xff}, {0x6e, 0xce, 0x58, 0xff}, {0xb5, 0xde, 0x2b, 0xff},
	{0xfd, 0xe7, 0x25, 0xff},
}

func heatColor(f float64) color.NRGBA {
	f = min(max(f, 0), 1) * float64(len(heatAnchors)-1)
	i := min(int(f), len(heatAnchors)-2)
	t := f - float64(i)
	a, b := heatAnchors[i], heatAnchors[i+1]
	mix := func(x, y uint8) uint8 { return uint8(float64(x) + (float64(y)-float64(x))*t + 0.5) }
	return color.NRGBA{mix(a.R, b.R), mix(a.G, b.G), mix(a.B, b.B), 0xff}
}

func heatRow(img *image.NRGBA, row int, cols []Column, lo, hi int64) {
	span := float64(max(hi-lo, 1))
	for c := range cols {
		if cols[c].N == 0 {
			img.SetNRGBA(c, row, color.NRGBA{0xee, 0xee, 0xee, 0xff})
			continue
		}
		img.SetNRGBA(c, row, heatColor(float64(cols[c].Max-lo)/span))
	}
}

func pngDataURL(img image.Image) (template.URL, error) {
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img); err != nil {
		return "", err
	}
	return template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())), nil
}

// compactRanks writes sorted ranks as ranges ("0–7, 12"), cut at about
// limit characters.
func compactRanks(ranks []int64, limit int) string {
	var b strings.Builder
	for i := 0; i < len(ranks); {
		j := i
		for j+1 < len(ranks) && ranks[j+1] == ranks[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		if b.Len() > limit {
			b.WriteString("…")
			break
		}
		b.WriteString(strconv.FormatInt(ranks[i], 10))
		if j > i {
			b.WriteString("–")
			b.WriteString(strconv.FormatInt(ranks[j], 10))
		}
		i = j + 1
	}
	return b.String()
}

func fmtBytes(v int64) string {
	const gib, mib = 1 << 30, 1 << 20
	switch {
	case v >= gib || v <= -gib:
		return strconv.FormatFloat(float64(v)/gib, 'f', 2, 64) + " GiB"
	case v >= mib || v <= -mib:
		return strconv.FormatFloat(float64(v)/mib, 'f', 1, 64) + " MiB"
	}
	return strconv.FormatInt(v, 10) + " B"
}
