package report

import (
	"bytes"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

func render(t *testing.T, job *Job, results []Result, opts Options) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, job, results, opts); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

var (
	resultGroupTag = regexp.MustCompile(`<g class="res ([^"]*)">((?:<rect [^>]*/>)*)</g>`)
	resultRect     = regexp.MustCompile(`<rect x="(\d+)" width="(\d+)" data-i="(\d+)"/>`)
)

func TestRenderShadesEveryResult(t *testing.T) {
	// 200 000 samples on 300 columns, 1 000 results one nanosecond wide,
	// many in the same column, and results on a rank without events: each
	// result gets its own interval of at least one pixel.
	b := NewBuilder(false)
	for i := range 200_000 {
		e := sample(0, int64(i)*5_000_000, int64(i%97)*mib)
		b.Add(&e)
	}
	job := b.Job()
	rng := rand.New(rand.NewPCG(1, 2))
	var results []Result
	for i := range 1000 {
		start := rng.Int64N(job.EndNs)
		rank := int64(0)
		if i%10 == 0 {
			rank = 7
		}
		results = append(results, Result{Rank: rank, StartNs: start, EndNs: start + 1, Classification: knownClasses[i%4]})
	}
	out := render(t, job, results, Options{Columns: 300})

	seen := map[int]bool{}
	for _, g := range resultGroupTag.FindAllStringSubmatch(out, -1) {
		for _, m := range resultRect.FindAllStringSubmatch(g[2], -1) {
			x, _ := strconv.Atoi(m[1])
			w, _ := strconv.Atoi(m[2])
			i, _ := strconv.Atoi(m[3])
			if seen[i] {
				t.Errorf("result %d shaded twice", i)
			}
			seen[i] = true
			if w < 1 || x < 0 || x+w > 300 {
				t.Errorf("result %d at x=%d width=%d, want inside the 300 columns and >= 1 wide", i, x, w)
			}
			if want := "c-" + results[i].Classification; g[1] != want {
				t.Errorf("result %d class %q, want %q", i, g[1], want)
			}
		}
	}
	if len(seen) != len(results) {
		t.Errorf("%d results shaded, want %d", len(seen), len(results))
	}
	if !strings.Contains(out, `data-rank="7"`) {
		t.Error("no lane for rank 7, which has results but no events")
	}
}

func TestRenderEscapesHostileStrings(t *testing.T) {
	hostile := []string{
		`</script><script>alert("job")</script>`,
		`"><img src=x onerror=alert('host')>`,
		`phase" onmouseover="alert(1)`,
		"comm\u2028<!--",
		`op'/><svg onload=alert(4)>`,
		`class" onclick="x`,
	}
	e1 := sample(0, 0, gib)
	e1.JobID, e1.Host = hostile[0], hostile[1]
	enter := boundary(0, 0, true, hostile[2], 0, hostile[2], hostile[0])
	exit := boundary(0, 50, false, hostile[2], 1, hostile[2], hostile[0])
	m := marker(0, 20, map[string]any{"nccl.op": hostile[4], "nccl.comm.id": hostile[3]})
	e2 := sample(0, 100, 2*gib)
	b := NewBuilder(true)
	for _, e := range []*telemetry.Event{&e1, &enter, &m, &exit, &e2} {
		b.Add(e)
	}
	raw := `{"rank":0,"interval_start_ns":10,"interval_end_ns":60,"classification":` + strconvQuote(hostile[5]) +
		`,"confidence":0.5,"note":` + strconvQuote(hostile[0]) + `,"collective":{"op":` + strconvQuote(hostile[1]) + `}}`
	r, err := ParseResult([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	out := render(t, b.Job(), []Result{r}, Options{
		Title:  hostile[1],
		Config: []Field{{Key: hostile[2], Value: hostile[0]}},
		Inputs: []Field{{Key: "input", Value: hostile[4]}},
	})
	for _, h := range hostile {
		if strings.Contains(out, h) {
			t.Errorf("output holds %q unescaped", h)
		}
	}
	for _, tag := range []string{"<img", "<svg onload", "<!--"} {
		if strings.Contains(out, tag) {
			t.Errorf("output holds %q", tag)
		}
	}
	if n := strings.Count(out, "<script"); n != 3 {
		t.Errorf("%d script elements, want 3", n)
	}
	if n := strings.Count(out, "</script"); n != 3 {
		t.Errorf("%d script end tags, want 3", n)
	}
	// An unknown classification is drawn in the neutral class, not as a
	// class name of its own.
	if !strings.Contains(out, `<g class="res c-other">`) {
		t.Error("the unknown classification is not drawn as c-other")
	}
	// The strings are there, escaped, for the reader.
	if !strings.Contains(out, "&lt;/script&gt;&lt;script&gt;alert(&#34;job&#34;)&lt;/script&gt;") {
		t.Error("the job id is not shown as text")
	}
}

func strconvQuote(s string) string {
	return string(telemetry.AppendString(nil, s))
}

func TestRenderEmptyJob(t *testing.T) {
	out := render(t, NewBuilder(false).Job(), nil, Options{})
	if !strings.Contains(out, `id="lanes"`) || strings.Contains(out, `class="lane"`) {
		t.Error("an empty job should render the page without lanes")
	}
}
