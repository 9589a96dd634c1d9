import { stripAnsi } from "./colour.js";

/** One column of a table: its header and how to read a cell from a row. */
export interface TableColumn<TRow> {
  readonly header: string;
  cell(row: TRow): string;
  /** Right-align (numbers, sizes). */
  readonly align?: "left" | "right" | undefined;
}

function visibleWidth(text: string): number {
  // Code points, not UTF-16 units, so that emoji and CJK ids do not break alignment too badly.
  return [...stripAnsi(text)].length;
}

/**
 * Renders rows as a plain aligned table, like `docker ps`: a header line, then one line per row, columns
 * separated by three spaces, the last column not padded. Cell text is kept on one line.
 */
export function renderTable<TRow>(
  rows: readonly TRow[],
  columns: readonly TableColumn<TRow>[],
  styleHeader: (text: string) => string = (text) => text,
): string {
  const cells = rows.map((row) => columns.map((column) => oneLine(column.cell(row))));
  const widths = columns.map((column, index) =>
    Math.max(visibleWidth(column.header), ...cells.map((line) => visibleWidth(line[index] ?? ""))),
  );
  const render = (line: readonly string[], isHeader: boolean): string =>
    line
      .map((text, index) => {
        const last = index === line.length - 1;
        const pad = " ".repeat(Math.max(0, (widths[index] ?? 0) - visibleWidth(text)));
        const styled = isHeader ? styleHeader(text) : text;
        if (columns[index]?.align === "right") return pad + styled;
        return last ? styled : styled + pad;
      })
      .join("   ")
      .trimEnd();
  const header = render(
    columns.map((column) => column.header),
    true,
  );
  return [header, ...cells.map((line) => render(line, false))].join("\n") + "\n";
}

function oneLine(text: string): string {
  return text.replace(/[\r\n\t]+/g, " ");
}
