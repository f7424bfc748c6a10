import type { JSX } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { chartText as text, COUNT_STEPS, DURATION_STEPS_MS, timeSplits } from '../lib/chart-labels';

export interface ChartSeries {
  label: string;
  /** A CSS custom property of the theme (e.g. `--c-completed`); canvas needs the resolved colour. */
  color: string;
  /** Formats a value for the legend and the axis; default: a count (`integer`), a duration (`durations`) or the number. */
  format?: (value: number) => string;
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
  /** Values are durations in milliseconds: ticks on 1 s, 15 s, 1 min, … */
  durations?: boolean;
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
  const fallback = props.integer ? text.count : props.durations ? text.duration : (v: number) => String(v);
  const format = props.series[0]?.format ?? fallback;
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
        // On the local clock, so that a day's chart has a midnight tick to carry the date (lib/chart-labels.ts).
        splits: (u, _axis, min, max) => timeSplits(min, max, u.bbox.width > 0 ? u.bbox.width / (devicePixelRatio || 1) : u.width - 60),
        values: (u, splits) => {
          const labels = text.timeAxis(splits, (u.scales.x!.max ?? 0) - (u.scales.x!.min ?? 0));
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
        ...(props.integer ? { incrs: COUNT_STEPS } : props.durations ? { incrs: DURATION_STEPS_MS } : {}),
        values: (_u, values) => values.map((v) => format(v)),
      },
    ],
    hooks: {
      draw: [(u) => {
        element.dataset.xSpan = String(Math.round((u.scales.x!.max ?? 0) - (u.scales.x!.min ?? 0)));
      }],
    },
    series: [
      { label: 'time', value: (u: uPlot, v: number | null) => (v === null ? '' : text.legendTime(v, (u.scales.x!.max ?? 0) - (u.scales.x!.min ?? 0))) },
      ...props.series.map((s) => ({
        label: s.label,
        stroke: resolveColor(s.color, element),
        width: 2,
        // A value between two gaps (one sampled minute) has no line to be part of: draw it as a dot.
        points: props.stepped ? { show: false } : { show: true, size: 6, fill: resolveColor(s.color, element), filter: isolated },
        value: (_u: uPlot, v: number | null) => (v === null ? '—' : (s.format ?? fallback)(v)),
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
