package pipeline

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/schemareg"
)

// TestHostileSchemasAreDeadLettered: under --validate-json-schema, the
// records of schemas that cannot be used are dead letters, bad_schema,
// with the reason, and the partition goes on with the records around
// them: 28 levels of an anyOf of two $refs (2^28 evaluations of a value;
// before, its first record held the partition while the member's memory
// grew by gigabytes), a pattern with a lookahead Go's regexp does not
// take, and a remote $ref (before, both were waited out as registry
// outages for ever, holding the partition).
func TestHostileSchemasAreDeadLettered(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	const good = `{"type":"object","properties":{"id":{"type":"string"},"a":{"type":"number"},"label":{"enum":[-1,1]}},"required":["id","label"]}`
	var deep strings.Builder
	deep.WriteString(`{"allOf":[{"$ref":"#/definitions/l28"}],"definitions":{"l0":{"required":["no-such-field"]}`)
	for i := 1; i <= 28; i++ {
		fmt.Fprintf(&deep, `,"l%d":{"anyOf":[{"$ref":"#/definitions/l%d"},{"$ref":"#/definitions/l%d"}]}`, i, i-1, i-1)
	}
	deep.WriteString("}}")
	schemas := map[string]func(string) (int, string){
		"1": registryAnswer("JSON", good),
		"2": registryAnswer("JSON", deep.String()),
		"3": registryAnswer("JSON", `{"type":"object","properties":{"id":{"type":"string","pattern":"^(?!x)"}}}`),
		"4": registryAnswer("JSON", `{"$ref":"https://example.com/schema.json"}`),
	}
	b := startBroker(t, "in", "out", "in.dlq")
	_, url := startRegistryStub(t, func(id string) (int, string) { return schemas[id](id) })
	var msgs []kafka.Message
	for i := range 120 {
		id := uint32(1)
		if i%6 == 5 {
			id = uint32(2 + i%3)
		}
		v := fmt.Sprintf(`{"id":"r%d","a":%v,"label":%s}`, i, float64(i%7)-2.5, []string{"1", "-1"}[(i/3)%2])
		msgs = append(msgs, kafka.Message{Value: append(codec.AppendFrame(nil, id), v...)})
	}
	produce(t, b, "in", msgs, kafka.BalancerFunc(func(kafka.Message, ...int) int { return 1 }))
	cfg := registryConfig(t, b, url, schemareg.Config{ValidateJSON: true})
	cfg.Model.Format, cfg.Metrics = codec.FormatJSONSchema, NewMetrics(nil)
	runMember(t, cfg)
	preds := readTopic(t, b, "out", 100, 30*time.Second)
	dead := readTopic(t, b, "in.dlq", 20, 30*time.Second)
	if len(preds) != 100 || len(dead) != 20 {
		t.Fatalf("%d predictions and %d dead letters, want 100 and 20", len(preds), len(dead))
	}
	says := map[uint32]string{2: "evaluate one value", 3: "pattern", 4: "example.com"}
	for _, d := range dead {
		h := headers(d.msg)
		off, _ := strconv.Atoi(h[HeaderSourceOffset])
		id := uint32(2 + off%3)
		if h[HeaderError] != string(codec.ReasonBadSchema) || off%6 != 5 || !strings.Contains(h[HeaderErrorDetail], says[id]) {
			t.Errorf("offset %d: %q (%s); want %s naming %q", off, h[HeaderError], h[HeaderErrorDetail], codec.ReasonBadSchema, says[id])
		}
	}
	if n := testutil.ToFloat64(cfg.Metrics.DeadLetters.WithLabelValues("1", string(codec.ReasonBadSchema))); n != 20 {
		t.Errorf("bad_schema dead letters counted: %v, want 20", n)
	}
}
