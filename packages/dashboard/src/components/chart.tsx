import type { JSX } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface ChartSeries {
  label: string;
  /** A CSS custom property of the theme (e.g. `--c-completed`); canvas needs the resolved colour. */
  color: string;
  /** Formats a value for the legend and the axis. */
  format?: (value: number) => string;
}

/** Tick steps for counts: whole numbers only. */
const INTEGER_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 1e7, 1e8];
const timeOfDay = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
const hourMinute = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const weekdayTime = new Intl.DateTimeFormat(undefined, { weekday: 'short', hour: '2-digit', minute: '2-digit' });
const weekdayDay = new Intl.DateTimeFormat(undefined, { weekday: 'short', day: 'numeric', month: 'short' });

/**
 * Time-axis labels in the browser's zone, never with a year: times of day
 * up to a day and a half (a midnight tick names its day once the chart spans
 * more than a few hours), and days for longer spans.
 */
export function timeAxisLabels(splits: readonly number[], spanSeconds: number): string[] {
  return splits.map((s) => {
    const at = new Date(s * 1000);
    const midnight = at.getHours() === 0 && at.getMinutes() === 0;
    if (spanSeconds > 36 * 3600) return midnight ? weekdayDay.format(at) : hourMinute.format(at);
    return midnight && spanSeconds > 6 * 3600 ? weekdayDay.format(at) : hourMinute.format(at);
  });
}

/** The legend's time of the point under the cursor: seconds only on short spans, the weekday on long ones. */
function legendTime(seconds: number, spanSeconds: number): string {
  const at = new Date(seconds * 1000);
  if (spanSeconds > 24 * 3600) return weekdayTime.format(at);
  return spanSeconds > 3 * 3600 ? hourMinute.format(at) : timeOfDay.format(at);
}

interface ChartProps {
  title: string;
  series: ChartSeries[];
  /** [unix seconds[], ...one array per series] */
  data: [number[], ...(number | null)[][]];
  height?: number;
  /** Draw points as steps (per-minute counts) instead of lines. */
  stepped?: boolean;
  /** Values are counts: ticks on whole numbers. */
  integer?: boolean;
  /** The x range in unix seconds (a requested window); default: the data's own, at least five minutes. */
  range?: [number, number];
}

/** uPlot's axis font; labels are measured in it so the axis is as wide as its longest label. */
const AXIS_FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Noto Sans", sans-serif';
let measurer: CanvasRenderingContext2D | null = null;

function labelWidth(labels: readonly string[]): number {
  measurer ??= document.createElement('canvas').getContext('2d');
  if (!measurer) return Math.max(0, ...labels.map((l) => l.length * 7));
  measurer.font = AXIS_FONT;
  return Math.ceil(Math.max(0, ...labels.map((l) => measurer!.measureText(l).width)));
}

/** Tick length, gap and a little air around a y label (uPlot's defaults: ticks 10, gap 5). */
const Y_AXIS_CHROME = 10 + 5 + 6;

/**
 * The x range: uPlot spreads a lone sample (or none) over years. With fewer
 * than a minute of data we show the last five minutes up to the newest point.
 */
export function timeRange(min: number | null, max: number | null, now = Date.now() / 1000): [number, number] {
  if (min === null || max === null || !Number.isFinite(min) || !Number.isFinite(max)) return [now - 300, now];
  if (max - min < 60) return [max - 300, max];
  return [min, max];
}

/** Indices of values with no value on either side (points.filter). */
function isolated(u: uPlot, seriesIdx: number): number[] {
  const values = u.data[seriesIdx] ?? [];
  const out: number[] = [];
  for (let i = 0; i < values.length; i++) {
    if (values[i] != null && values[i - 1] == null && values[i + 1] == null) out.push(i);
  }
  return out;
}

function resolveColor(color: string, element: Element): string {
  if (!color.startsWith('--')) return color;
  return getComputedStyle(element).getPropertyValue(color).trim() || '#888';
}

function options(props: ChartProps, width: number, element: HTMLElement, range: { current: [number, number] | undefined }): uPlot.Options {
  const axisColor = resolveColor('--fg-muted', element);
  const gridColor = resolveColor('--border', element);
  const format = props.series[0]?.format ?? ((v: number) => String(v));
  const axis: uPlot.Axis = { stroke: axisColor, grid: { stroke: gridColor, width: 1 }, ticks: { stroke: gridColor, width: 1 } };
  return {
    width,
    height: props.height ?? 180,
    legend: { live: true },
    cursor: { drag: { x: false, y: false } },
    scales: {
      // From the data itself: for a lone point uPlot passes min..min + 86,400,000 (a day in ms, read as seconds).
      x: { time: true, range: (u) => range.current ?? timeRange(u.data[0]?.[0] ?? null, u.data[0]?.[u.data[0].length - 1] ?? null) },
      y: { range: (_u, min, max) => [Math.min(0, min ?? 0), Math.max(1, (max ?? 1) * 1.1)] },
    },
    axes: [
      {
        ...axis,
        values: (u, splits) => {
          const labels = timeAxisLabels(splits, (u.scales.x!.max ?? 0) - (u.scales.x!.min ?? 0));
          // What was drawn, for the end-to-end tests.
          element.dataset.xLabels = labels.join('|');
          return labels;
        },
      },
      {
        ...axis,
        font: AXIS_FONT,
        // A fixed width clipped long labels from the left: "1 min 20 s" showed as "in 20 s".
        size: (_u, values) => {
          const labels = (values ?? []).map(String);
          const size = Math.max(40, labelWidth(labels) + Y_AXIS_CHROME);
          // What was drawn, for the end-to-end tests (a canvas has no text to read).
          element.dataset.yLabels = labels.join('|');
          element.dataset.yLabelWidth = String(labelWidth(labels));
          element.dataset.yAxisSize = String(size);
          return size;
        },
        ...(props.integer ? { incrs: INTEGER_STEPS } : {}),
        values: (_u, values) => values.map((v) => format(v)),
      },
    ],
    hooks: {
      draw: [(u) => {
        element.dataset.xSpan = String(Math.round((u.scales.x!.max ?? 0) - (u.scales.x!.min ?? 0)));
      }],
    },
    series: [
      { label: 'time', value: (u: uPlot, v: number | null) => (v === null ? '' : legendTime(v, (u.scales.x!.max ?? 0) - (u.scales.x!.min ?? 0))) },
      ...props.series.map((s) => ({
        label: s.label,
        stroke: resolveColor(s.color, element),
        width: 2,
        // A value between two gaps (one sampled minute) has no line to be part of: draw it as a dot.
        points: props.stepped ? { show: false } : { show: true, size: 6, fill: resolveColor(s.color, element), filter: isolated },
        value: (_u: uPlot, v: number | null) => (v === null ? '—' : (s.format ?? String)(v)),
        ...(props.stepped ? { paths: uPlot.paths.stepped!({ align: 1 }), fill: `${resolveColor(s.color, element)}22` } : {}),
      })),
    ],
  };
}

/** A time-series chart (uPlot: ~50 kB, canvas, fast with thousands of points). */
export function Chart(props: ChartProps): JSX.Element {
  const container = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const rangeRef = useRef<[number, number] | undefined>(props.range);

  useEffect(() => {
    const element = container.current;
    if (!element) return;
    const u = new uPlot(options(props, element.clientWidth || 300, element, rangeRef), props.data as uPlot.AlignedData, element);
    plot.current = u;
    const observer = new ResizeObserver(() => {
      const width = element.clientWidth;
      if (width > 0 && width !== u.width) u.setSize({ width, height: props.height ?? 180 });
    });
    observer.observe(element);
    return () => {
      observer.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [props.series.map((s) => s.label).join('|')]);

  // The x scale reads the range whenever it is set again (setData below).
  rangeRef.current = props.range;
  useEffect(() => {
    plot.current?.setData(props.data as uPlot.AlignedData);
  }, [props.data, props.range?.[0], props.range?.[1]]);

  return (
    <figure class="chart">
      <figcaption>{props.title}</figcaption>
      <div ref={container} class="chart-canvas" />
    </figure>
  );
}
