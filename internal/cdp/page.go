package cdp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// Page is one tab with Page, Runtime and Log events enabled.
type Page struct {
	b         *Browser
	SessionID string
}

// NewPage opens a blank tab of the given viewport size.
func (b *Browser) NewPage(ctx context.Context, width, height int) (*Page, error) {
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.Call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return nil, err
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.Call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		return nil, err
	}
	p := &Page{b: b, SessionID: att.SessionID}
	for _, m := range []string{"Page.enable", "Runtime.enable", "Log.enable"} {
		if err := b.Call(ctx, p.SessionID, m, struct{}{}, nil); err != nil {
			return nil, err
		}
	}
	return p, p.SetViewport(ctx, width, height)
}

// SetViewport sets the page's viewport in CSS pixels.
func (p *Page) SetViewport(ctx context.Context, width, height int) error {
	return p.b.Call(ctx, p.SessionID, "Emulation.setDeviceMetricsOverride", map[string]any{
		"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false,
	}, nil)
}

// Navigate loads url and waits for its load event.
func (p *Page) Navigate(ctx context.Context, url string) error {
	loaded := p.b.Expect(func(e Event) bool {
		return e.SessionID == p.SessionID && e.Method == "Page.loadEventFired"
	})
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := p.b.Call(ctx, p.SessionID, "Page.navigate", map[string]any{"url": url}, &nav); err != nil {
		return err
	}
	if nav.ErrorText != "" {
		return fmt.Errorf("cdp: navigate %s: %s", url, nav.ErrorText)
	}
	_, err := loaded(ctx)
	return err
}

// Eval evaluates a JavaScript expression (awaiting a promise) and decodes
// its JSON value into out.
func (p *Page) Eval(ctx context.Context, expr string, out any) error {
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	err := p.b.Call(ctx, p.SessionID, "Runtime.evaluate", map[string]any{
		"expression": expr, "awaitPromise": true, "returnByValue": true,
	}, &res)
	if err != nil {
		return err
	}
	if d := res.ExceptionDetails; d != nil {
		return fmt.Errorf("cdp: evaluate: %s %s", d.Text, d.Exception.Description)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(res.Result.Value, out)
}

// Screenshot returns a PNG of the viewport.
func (p *Page) Screenshot(ctx context.Context) ([]byte, error) {
	var res struct {
		Data string `json:"data"`
	}
	if err := p.b.Call(ctx, p.SessionID, "Page.captureScreenshot", map[string]any{"format": "png"}, &res); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(res.Data)
}

// Errors lists the page's uncaught exceptions, console.error calls and
// error log entries so far.
func (p *Page) Errors() []string {
	var out []string
	for _, e := range p.b.Events() {
		if e.SessionID != p.SessionID {
			continue
		}
		switch e.Method {
		case "Runtime.exceptionThrown":
			var v struct {
				ExceptionDetails struct {
					Text      string `json:"text"`
					Exception struct {
						Description string `json:"description"`
					} `json:"exception"`
				} `json:"exceptionDetails"`
			}
			_ = json.Unmarshal(e.Params, &v)
			out = append(out, "exception: "+v.ExceptionDetails.Text+" "+v.ExceptionDetails.Exception.Description)
		case "Runtime.consoleAPICalled":
			var v struct {
				Type string `json:"type"`
				Args []struct {
					Value any `json:"value"`
				} `json:"args"`
			}
			_ = json.Unmarshal(e.Params, &v)
			if v.Type == "error" || v.Type == "assert" {
				parts := make([]string, 0, len(v.Args))
				for _, a := range v.Args {
					parts = append(parts, fmt.Sprint(a.Value))
				}
				out = append(out, "console."+v.Type+": "+strings.Join(parts, " "))
			}
		case "Log.entryAdded":
			var v struct {
				Entry struct {
					Level, Text, URL string
				} `json:"entry"`
			}
			_ = json.Unmarshal(e.Params, &v)
			if v.Entry.Level == "error" {
				out = append(out, "log: "+v.Entry.Text+" "+v.Entry.URL)
			}
		}
	}
	return out
}

// Metrics returns the page's Performance.getMetrics values by name
// (ThreadTime and TaskDuration are the main thread's CPU and busy time in
// seconds). Performance.enable must have been called, see EnableMetrics.
func (p *Page) Metrics(ctx context.Context) (map[string]float64, error) {
	var res struct {
		Metrics []struct {
			Name  string  `json:"name"`
			Value float64 `json:"value"`
		} `json:"metrics"`
	}
	if err := p.b.Call(ctx, p.SessionID, "Performance.getMetrics", struct{}{}, &res); err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(res.Metrics))
	for _, m := range res.Metrics {
		out[m.Name] = m.Value
	}
	return out, nil
}

// EnableMetrics turns on Performance metrics collection.
func (p *Page) EnableMetrics(ctx context.Context) error {
	return p.b.Call(ctx, p.SessionID, "Performance.enable", map[string]any{"timeDomain": "threadTicks"}, nil)
}
