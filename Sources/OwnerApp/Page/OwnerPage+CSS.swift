extension OwnerPage {
    static let appCSS = #"""
        :root { font-family: system-ui, sans-serif; color: #1b1f23; background: #f6f7f9; }
        body { margin: 0 auto; max-width: 46rem; padding: 1rem; }
        header { display: flex; justify-content: space-between; align-items: center; }
        h1 { font-size: 1.4rem; } h2 { font-size: 1.2rem; }
        section { background: #fff; border-radius: .5rem; padding: 1rem; box-shadow: 0 1px 3px #0002; }
        form { display: grid; gap: .4rem; max-width: 24rem; }
        label { font-weight: 600; }
        input { font: inherit; padding: .45rem; border: 1px solid #99a; border-radius: .3rem; }
        button { font: inherit; padding: .45rem .9rem; border-radius: .3rem; border: 1px solid #246; background: #246;
                 color: #fff; cursor: pointer; }
        button[type=button]:not(#switch-on) { background: #fff; color: #246; }
        button:disabled { opacity: .5; cursor: default; }
        .buttons { display: flex; gap: .5rem; flex-wrap: wrap; margin: .6rem 0; }
        .error { color: #b00020; min-height: 1.2em; margin: 0; }
        .muted { color: #59606a; }
        .outlets { list-style: none; padding: 0; }
        .outlets li button { width: 100%; display: grid; grid-template-columns: 1fr auto; text-align: left;
                             background: #fff; color: inherit; border: 1px solid #ccd; margin-bottom: .4rem; }
        .outlets .power { font-variant-numeric: tabular-nums; font-weight: 600; }
        .figures { display: grid; grid-template-columns: repeat(auto-fit, minmax(9rem, 1fr)); gap: .5rem; }
        .figures div { background: #eef1f5; border-radius: .3rem; padding: .5rem; }
        .figures dt { font-size: .85rem; color: #59606a; } .figures dd { margin: 0; font-size: 1.2rem; }
        .on { color: #0a7d32; } .off { color: #59606a; } .failed { color: #b00020; } .pending { color: #8a5a00; }
        #chart-box svg { width: 100%; height: auto; }
        #chart-box rect.has-data { fill: #2a6fb0; } #chart-box rect.no-data { fill: #dde3ea; }
        #chart-box text { font-size: 10px; fill: #59606a; }
        #chart-box line.grid { stroke: #e3e7ec; stroke-width: 1; }
        \#(automationsCSS)
        """#
}
