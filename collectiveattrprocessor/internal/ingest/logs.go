package ingest

import (
	"math"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/collectiveattr/collectiveattr/telemetry"
	"github.com/collectiveattr/collectiveattr/window"
)

const schemaVersionKey = `"schema_version"`

// logsConverter turns log records into stormlog Records and hands the
// others to the Inspector reader.
type logsConverter struct {
	cfg  *Config
	now  func() time.Time
	ids  *identityResolver
	insp *inspectorConverter
	// jsonBuf is the body as JSON text, and dec the engine's decoder
	// (which interns short strings across calls).
	jsonBuf []byte
	dec     telemetry.Decoder
	// rec is the Record handed to emit: emit reads it during the call and
	// copies what it keeps, so no Record is copied or allocated per item.
	rec Record
}

// convertLogs parses stormlog TelemetryEvent records (contract §3.4) from log
// bodies: a string holding a JSON object, or a map (converted to JSON, see
// appendJSONValue). A record is stormlog's when its schema_version is 2, 3
// or 4; it is then decoded with the reference's full validation, and a
// record that fails is skipped as invalid_value with the reference's
// message. Every other log record is not stormlog telemetry and is ignored
// without a Skip: it is not an error to share a pipeline with other logs.
//
// The record's job is its job_id, else its session_id, else the job id of
// the log record's or resource's attributes (contract §2 keys), else "".
// Its rank is the record's own.
func (c *logsConverter) convertLogs(ld plog.Logs, emit func(*Record), skip func(Skip)) {
	nowNs := c.now().UnixNano()
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		rl := rls.At(i)
		resScanned := false
		sls := rl.ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				lr := lrs.At(k)
				data, ours, detail := c.stormlogJSON(lr.Body())
				if !ours {
					c.insp.convertInspector(lr, nowNs, emit, skip)
					continue
				}
				if detail != "" {
					skip(Skip{Reason: SkipInvalidValue, Detail: detail})
					continue
				}
				ev, err := c.dec.Decode(data)
				if err != nil {
					skip(Skip{Reason: SkipInvalidValue, Detail: "stormlog record: " + err.Error()})
					continue
				}
				if ev.TimestampNs > c.cfg.futureLimit(nowNs) {
					skip(futureSkip)
					continue
				}
				job := ev.JobID
				if job == "" {
					job = ev.SessionID
				}
				if job == "" {
					if !resScanned {
						c.ids.beginResource(rl.Resource().Attributes())
						resScanned = true
					}
					job = c.attributeJob(lr.Attributes())
				}
				c.emitStormlog(ev, job, fileLineOf(lr.Attributes()), nowNs, emit, skip)
			}
		}
	}
	if cap(c.jsonBuf) > maxKeptJSONBuf {
		c.jsonBuf = nil // one huge body must not pin its buffer forever
	}
	if cap(c.insp.jsonBuf) > maxKeptJSONBuf {
		c.insp.jsonBuf = nil
	}
	c.ids.dropRequest()
}

const maxKeptJSONBuf = 1 << 20

func (c *logsConverter) emitStormlog(ev telemetry.Event, job string, line FileLine, nowNs int64, emit func(*Record), skip func(Skip)) {
	host := ev.Host
	if host == "unknown" {
		host = ""
	}
	if detail := c.ids.identityTooLong(job, host, ev.SessionID); detail != "" {
		skip(Skip{Reason: SkipInvalidValue, Detail: detail})
		return
	}
	ev.WorldSize = c.ids.believedWorldSize(ev.WorldSize)
	if !ev.DeviceTotalBytes.Valid && ev.DeviceUsedBytes.Value > maxDeviceBytes {
		skip(Skip{Reason: SkipInvalidValue, Detail: deviceUsedAboveAnyDevice})
		return
	}
	if !c.ids.admits(job) {
		skip(overJobLimit)
		return
	}
	c.ids.identifyStormlog(&ev, job, host, nowNs)
	c.insp.learnStormlogProcess(&ev, c.ids.id.job)
	c.rec = Record{
		Kind:        KindStormlog,
		JobID:       c.ids.id.job,
		Rank:        ev.Rank,
		WorldSize:   ev.WorldSize,
		Host:        c.ids.id.host,
		TimestampNs: ev.TimestampNs,
		Event:       ev,
		Line:        line,
	}
	c.rec.Stormlog = window.ClassifyStormlog(&c.rec.Event)
	emit(&c.rec)
}

// attributeJob is the job id of the log record's attributes, else of its
// resource's (the resolver's resID), else "".
func (c *logsConverter) attributeJob(attrs pcommon.Map) string {
	c.ids.itemID.reset()
	c.ids.itemID.scan(c.ids.keys, attrs)
	for _, r := range [...]*rawIdentity{&c.ids.itemID, &c.ids.resID} {
		if r.found[fieldJob] {
			if s, ok := jobValue(r.val[fieldJob]); ok {
				return s
			}
		}
	}
	return ""
}

// stormlogJSON returns the JSON text of a body that claims to be a stormlog
// record (ours), or ours=false for any other body. detail is set when the
// body is ours but cannot be turned into JSON.
func (c *logsConverter) stormlogJSON(body pcommon.Value) (data []byte, ours bool, detail string) {
	switch body.Type() {
	case pcommon.ValueTypeStr:
		s := body.Str()
		t := strings.TrimSpace(s)
		if len(t) < 2 || t[0] != '{' || !isStormlogVersion(versionLexeme(t)) {
			return nil, false, ""
		}
		c.jsonBuf = append(c.jsonBuf[:0], t...)
		return c.jsonBuf, true, ""
	case pcommon.ValueTypeMap:
		m := body.Map()
		v, ok := m.Get("schema_version")
		if !ok {
			return nil, false, ""
		}
		if n, ok := intValue(v); !ok || n < 2 || n > 4 || v.Type() == pcommon.ValueTypeStr {
			return nil, false, ""
		}
		buf, err := appendJSONValue(c.jsonBuf[:0], body, 0)
		c.jsonBuf = buf[:0]
		if err != "" {
			return nil, true, err
		}
		return buf, true, ""
	default:
		return nil, false, ""
	}
}

// versionLexeme finds the top-level "schema_version" member of the JSON
// object text s and returns its value's number lexeme ("" when there is
// none). A cheap pre-filter: the decoder does the real parsing. Stormlog
// writes the member first, so the common case is one search; a key nested
// in an object or a string before it, or a repeated key (Python's json
// keeps the last), takes a scan of the text.
func versionLexeme(s string) string {
	i := indexSchemaVersionKey(s)
	if i < 0 {
		return ""
	}
	if !isObjectStart(s[:i]) || indexSchemaVersionKey(s[i+len(schemaVersionKey):]) >= 0 {
		if i = lastTopLevelKey(s, schemaVersionKey); i < 0 {
			return ""
		}
	}
	s = strings.TrimLeft(s[i+len(schemaVersionKey):], " \t\r\n")
	if s == "" || s[0] != ':' {
		return ""
	}
	s = strings.TrimLeft(s[1:], " \t\r\n")
	n := 0
	for n < len(s) && strings.IndexByte("-+0123456789.eE", s[n]) >= 0 {
		n++
	}
	return s[:n]
}

// indexSchemaVersionKey is strings.Index(s, schemaVersionKey). A record's
// text is about one byte in ten a quote, the needle's first byte, so the
// search looks for the key's tail instead, whose 'v' is rare in stormlog
// records, and checks the head before it: the search for a repeated key
// runs over every record's whole text.
func indexSchemaVersionKey(s string) int {
	const head, tail = `"schema_`, `version"`
	for from := 0; ; {
		j := strings.Index(s[from:], tail)
		if j < 0 {
			return -1
		}
		j += from
		if j >= len(head) && s[j-len(head):j] == head {
			return j - len(head)
		}
		from = j + 1
	}
}

// isObjectStart reports whether prefix is "{" with any white space or
// nothing else around: the next key is the object's first member.
func isObjectStart(prefix string) bool {
	return strings.Trim(prefix, " \t\r\n") == "{"
}

// lastTopLevelKey returns the index in the object text s of the last
// member key equal to quotedKey (quotes included) at the object's own
// level, -1 when there is none. Strings are skipped whole (escapes
// included), so a key inside a value or a nested object is not one.
func lastTopLevelKey(s, quotedKey string) int {
	last, depth := -1, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			start := i
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
			if depth == 1 && s[start:min(i+1, len(s))] == quotedKey {
				if rest := strings.TrimLeft(s[min(i+1, len(s)):], " \t\r\n"); rest != "" && rest[0] == ':' {
					last = start
				}
			}
		}
	}
	return last
}

// isStormlogVersion reports whether a number lexeme means 2, 3 or 4 (1.0
// style forms included, so that the decoder reports them as errors of an
// otherwise stormlog record).
func isStormlogVersion(lex string) bool {
	if lex == "" {
		return false // no error value to allocate for the common non-stormlog body
	}
	f, err := strconv.ParseFloat(lex, 64)
	return err == nil && (f == 2 || f == 3 || f == 4)
}

// Filelog's attributes of where a record stands in its file.
const (
	attrFilePath         = "log.file.path"
	attrFileName         = "log.file.name"
	attrFileRecordNumber = "log.file.record_number"
	attrFileRecordOffset = "log.file.record_offset"
)

// fileLineOf reads the FileLine of a log record's attributes.
func fileLineOf(attrs pcommon.Map) FileLine {
	var fl FileLine
	if v, ok := attrs.Get(attrFileRecordNumber); ok && v.Type() == pcommon.ValueTypeInt && v.Int() > 0 {
		fl.Position = v.Int()
	} else if v, ok := attrs.Get(attrFileRecordOffset); ok && v.Type() == pcommon.ValueTypeInt && v.Int() >= 0 && v.Int() < math.MaxInt64 {
		fl.Position = v.Int() + 1
	} else {
		return FileLine{}
	}
	if v, ok := attrs.Get(attrFilePath); ok && v.Type() == pcommon.ValueTypeStr {
		fl.File = v.Str()
	} else if v, ok := attrs.Get(attrFileName); ok && v.Type() == pcommon.ValueTypeStr {
		fl.File = v.Str()
	}
	return fl
}
